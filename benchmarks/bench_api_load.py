"""Reads stay prompt while submits hang: the REST API under 50 polling clients and 10 submits
blocked on a Kubernetes API server that never answers.

    python benchmarks/bench_api_load.py [--clients 50] [--submits 10] [--seconds 20] [--interval 2]

Everything is on 127.0.0.1 and bounded: a real Jupyter server with the extension, the tests'
simulated Kubernetes API server (`tests/kube_sim`, no controllers) told to hang every ConfigMap create (the first
object a submit creates), `--submits` submits of a native Kubernetes run sent at once, then
`--clients` clients each polling `GET runs`, a log and the metrics of a running run every
`--interval` seconds (the sidebar's pace) for `--seconds`. Each read's time is measured from the
client (HTTP included). The submits are checked to be still hanging when the polling ends.

Exits non-zero if any read took 1 s or more, or failed. The keeper is off (`keeper_interval=0`):
what is measured is the requests, not a keeper pass beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from kube_sim import Cluster  # noqa: E402
from server_bench import TOKEN, first_answer, free_port, start_server  # noqa: E402

from jupyter_px.runstore import ReplicaStatus, RunRecord, RunState, RunStatus, RunStore  # noqa: E402

NATIVE = {"framework": "pytorch", "backend": "native", "environment": {"replicas": {"n_workers": 1}}}
LOCAL = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 1}}}
#: The bound every read must stay under.
BOUND_S = 1.0
#: The longest the whole benchmark may take beyond the polling (server start, teardown).
OVERHEAD_S = 120.0


def request(url: str, body: dict | None = None, timeout: float = 60) -> tuple[int, float]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Authorization": f"token {TOKEN}"})
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            response.read()
            code = response.status
    except urllib.error.HTTPError as error:
        error.read()
        code = error.code
    return code, time.perf_counter() - start


def running_run(store: RunStore) -> str:
    """A local run in the store with a log and metrics to poll (no processes: reads only)."""
    run_id = "polled-1"
    paths = store.create(RunRecord(run_id=run_id, topology=LOCAL), {"main.py": "pass\n"})
    replicas = [ReplicaStatus(role=role, index=0, state="Running") for role in ("master", "worker")]
    store.write_status(RunStatus(run_id=run_id, state=RunState.RUNNING, started_at=time.time(), replicas=replicas))
    now = time.time()
    for role in ("master", "worker"):
        paths.log(role, 0).write_text("".join(f"{role} line {i}\n" for i in range(2000)))
        with open(paths.metrics(role, 0), "w") as out:
            for step in range(500):
                out.write(json.dumps({"step": step, "time": now + step, "metrics": {"loss": 1 / (step + 1)}}) + "\n")
    return run_id


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--submits", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--interval", type=float, default=2.0)
    args = parser.parse_args(argv)
    if not (1 <= args.clients <= 200 and 0 <= args.submits <= 50 and 0 < args.seconds <= 120):
        raise SystemExit("bounded: 1-200 clients, 0-50 submits, at most 120 s")
    work = Path(tempfile.mkdtemp(prefix="px-bench-load-"))
    home, root = work / "home", work / "root"
    root.mkdir()
    (root / "train.py").write_text("print('hi')\n")
    store = RunStore(home)
    run_id = running_run(store)
    started = time.monotonic()
    with Cluster(namespaces=("default",), controllers=()) as kube:
        env = dict(
            os.environ,
            PX_HOME=str(home),
            PYTHONPATH=str(ROOT),
            KUBECONFIG=kube.kubeconfig(work / "kubeconfig"),
            PX_K8S_CONFIG=str(work / "no-settings.yaml"),
            PX_K8S_IMAGE="python:3.11-slim",
        )
        port = free_port()
        server = start_server(port, root, env, ["--JupyterPxApp.keeper_interval=0"])
        base = f"http://127.0.0.1:{port}/px/api"
        reads = {
            "GET runs": f"{base}/runs?limit=100",
            "GET logs": f"{base}/runs/{run_id}/logs?role=master&index=0&offset=-65536",
            "GET metrics": f"{base}/runs/{run_id}/metrics",
        }
        times: dict[str, list[float]] = {name: [] for name in reads}
        failures: list[str] = []
        submitted: list[int] = []
        try:
            first_answer(lambda: request(reads["GET runs"], timeout=5), lambda answer: answer[0] == 200)
            with kube.hang("POST", "configmaps"):
                submit_threads = [
                    threading.Thread(
                        target=lambda: submitted.append(
                            request(f"{base}/runs", {"topology": NATIVE, "script": "train.py"}, timeout=300)[0]
                        ),
                        daemon=True,
                    )
                    for _ in range(args.submits)
                ]
                for thread in submit_threads:
                    thread.start()
                wait_until = time.monotonic() + 60
                while kube.hung < min(args.submits, 8) and time.monotonic() < wait_until:
                    time.sleep(0.05)
                hung_at_start = kube.hung
                stop_at = time.monotonic() + args.seconds
                lock = threading.Lock()

                def poll(offset: float) -> None:
                    time.sleep(offset)
                    while time.monotonic() < stop_at:
                        for name, url in reads.items():
                            try:
                                code, elapsed = request(url, timeout=30)
                            except (urllib.error.URLError, OSError) as error:
                                with lock:
                                    failures.append(f"{name}: {error}")
                                continue
                            with lock:
                                times[name].append(elapsed)
                                if code != 200:
                                    failures.append(f"{name}: HTTP {code}")
                        time.sleep(args.interval)

                clients = [
                    threading.Thread(target=poll, args=(args.interval * i / args.clients,), daemon=True)
                    for i in range(args.clients)
                ]
                for thread in clients:
                    thread.start()
                for thread in clients:
                    thread.join(timeout=args.seconds + 60)
                hung_at_end = kube.hung
                kube.fail("POST", "configmaps", 500, "InternalError", "the benchmark ends the hang", times=args.submits)
            for thread in submit_threads:
                thread.join(timeout=OVERHEAD_S)
        finally:
            server.terminate()
            server.wait(timeout=30)
    everything = [t for values in times.values() for t in values]
    print(
        f"{args.clients} clients polling every {args.interval:g} s for {args.seconds:g} s while {args.submits} "
        f"submits hang on the Kubernetes API server ({hung_at_start} creates hung at the start, {hung_at_end} "
        f"at the end); HTTP on 127.0.0.1, times seen by the clients:"
    )
    print(f"  {'read':<12} {'count':>6} {'median':>9} {'p99':>9} {'max':>9}")
    for name, values in times.items():
        if not values:
            print(f"  {name:<12} {0:>6}")
            continue
        ordered = sorted(values)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        print(
            f"  {name:<12} {len(values):>6} {statistics.median(values) * 1000:7.1f} ms "
            f"{p99 * 1000:6.1f} ms {max(values) * 1000:6.1f} ms"
        )
    print(f"  submits answered after the hang ended: {sorted(submitted)}")
    print(f"  failed reads: {len(failures)}" + (f" (first: {failures[0]})" if failures else ""))
    print(f"  total {time.monotonic() - started:.0f} s")
    slow = [t for t in everything if t >= BOUND_S]
    ok = bool(everything) and not slow and not failures and hung_at_end >= min(args.submits, 8)
    if not ok:
        print(f"FAIL: {len(slow)} reads took {BOUND_S:g} s or more, {len(failures)} failed", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
