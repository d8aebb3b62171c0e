"""Listing runs: `RunStore.list()` and `jupyter px runs --json` over 1,000 runs.

    python benchmarks/bench_store.py [--runs 1000]

The magics, the CLI and (soon) the sidebar list every run in the store on each refresh, so the
listing must stay fast as runs accumulate. Exits non-zero if listing 1,000 runs takes 0.5 s or
more in-process.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from jupyter_px.runstore import ReplicaStatus, RunRecord, RunStatus, RunStore


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args(argv)
    home = tempfile.mkdtemp(prefix="px-bench-store-")
    store = RunStore(home)
    topology = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 3}}}
    for i in range(args.runs):
        run_id = f"run-{i:05d}"
        store.create(RunRecord(run_id=run_id, topology=topology), {"main.py": "pass\n"})
        replicas = [ReplicaStatus(role="master", index=0)] + [ReplicaStatus(role="worker", index=w) for w in range(3)]
        store.write_status(RunStatus(run_id=run_id, replicas=replicas))
    times = []
    for _ in range(7):
        start = time.perf_counter()
        listed = store.list()
        times.append(time.perf_counter() - start)
    assert len(listed) == args.runs
    env = dict(os.environ, PX_HOME=home)
    cli = []
    for _ in range(3):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "jupyter_px.cli", "runs", "--json"], capture_output=True, env=env)
        cli.append(time.perf_counter() - start)
        assert done.returncode == 0, done.stderr
    in_process = statistics.median(times)
    print(
        f"{args.runs} runs: RunStore.list() {in_process * 1000:.1f} ms (median of 7); "
        f"`jupyter px runs --json` {statistics.median(cli) * 1000:.0f} ms (whole process, median of 3)"
    )
    return 0 if in_process < 0.5 else 1


if __name__ == "__main__":
    sys.exit(main())
