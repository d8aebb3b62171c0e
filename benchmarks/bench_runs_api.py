"""The sidebar's runs poll against a real Jupyter server with 1,000 runs in the store.

    python benchmarks/bench_runs_api.py [--runs 1000] [--repeat 21]

The runs list polls `GET px/api/runs?limit=100` every 2 s while visible, with the last ETag.
Measured from a client on the same machine (HTTP included), medians:

* the first poll (the server's summary cache is cold: every record and status is read);
* a poll when nothing changed (`If-None-Match` matches: 304, no JSON read);
* a poll after one run's status changed (one run re-read, the page re-sent);
* the same page without an ETag (warm cache, full body).

Exits non-zero if the 304 poll takes 50 ms or more, or a changed poll 250 ms or more.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from server_bench import TOKEN, first_answer, free_port, start_server

from jupyter_px.runstore import ReplicaState, RunRecord, RunState, RunStatus, RunStore


def get(url: str, etag: str | None = None) -> tuple[int, str | None, float]:
    headers = {"Authorization": f"token {TOKEN}"}
    if etag:
        headers["If-None-Match"] = etag
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as response:
            response.read()
            code, tag = response.status, response.headers.get("Etag")
    except urllib.error.HTTPError as error:
        code, tag = error.code, error.headers.get("Etag")
    return code, tag, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args(argv)
    home = Path(tempfile.mkdtemp(prefix="px-bench-api-"))
    store = RunStore(home)
    topology = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 3}}}
    for i in range(args.runs):
        run_id = f"run-{i:05d}"
        store.create(RunRecord(run_id=run_id, topology=topology), {"main.py": "pass\n"})
        status = RunStatus.initial(run_id, [("master", 0)] + [("worker", w) for w in range(3)])
        status.state = RunState.SUCCEEDED
        for replica in status.replicas:
            replica.state = ReplicaState.SUCCEEDED
        store.write_status(status)
    port = free_port()
    root = tempfile.mkdtemp(prefix="px-bench-root-")
    server = start_server(port, root, dict(os.environ, PX_HOME=str(home)))
    url = f"http://127.0.0.1:{port}/px/api/runs?limit=100"
    try:
        code, etag, first = first_answer(lambda: get(url), lambda answer: answer[0] == 200)
        unchanged, changed, full = [], [], []
        for i in range(args.repeat):
            code, _, elapsed = get(url, etag)
            assert code == 304, code
            unchanged.append(elapsed)
            status = store.status(f"run-{i:05d}")
            status.message = f"touched {i}"
            store.write_status(status)
            code, etag, elapsed = get(url, etag)
            assert code == 200, code
            changed.append(elapsed)
            code, _, elapsed = get(url)
            full.append(elapsed)
    finally:
        server.terminate()
        server.wait(timeout=20)
    ms = lambda values: statistics.median(values) * 1000  # noqa: E731
    print(f"{args.runs} runs, GET px/api/runs?limit=100 (HTTP on localhost, medians of {args.repeat}):")
    print(f"  first poll (cold cache)            {first * 1000:7.1f} ms")
    print(f"  nothing changed (304, ETag)        {ms(unchanged):7.1f} ms")
    print(f"  one run changed (200, 100 rows)    {ms(changed):7.1f} ms")
    print(f"  no ETag, warm cache (200)          {ms(full):7.1f} ms")
    return 0 if ms(unchanged) < 50 and ms(changed) < 250 else 1


if __name__ == "__main__":
    sys.exit(main())
