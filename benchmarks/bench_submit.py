"""Submit latency: how long `jupyter_px.submit()` takes to return on the local backend.

    python benchmarks/bench_submit.py            # 21 submits; --count N for more

Each round submits a one-replica run of a script that does nothing, times the `submit()` call
alone (validation, the resource check, writing the run directory, starting the supervisor),
then waits for the run to finish before the next round, so that the rounds do not compete with
each other's replicas for the cores. `%%px_distributed` without `--wait` makes the same call.

The figure is the median over the rounds; the benchmark fails (exit 1) unless it is under
TARGET_MS and every run succeeded. Runs go to a temporary PX_HOME, removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

TARGET_MS = 100.0
ROOT = Path(__file__).resolve().parents[1]
TOPOLOGY = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 0}}}


def measure(count: int) -> tuple[list[float], list[str]]:
    """Milliseconds per submit() call, and the final state of every run."""
    from jupyter_px.api import submit

    times, states = [], []
    for _ in range(count):
        start = time.perf_counter()
        run = submit("pass\n", TOPOLOGY)
        times.append((time.perf_counter() - start) * 1000)
        status = run.wait(timeout=120, poll=0.05)
        states.append(status.state.value)
        if status.state.value != "Succeeded":
            print(f"run {run.run_id} {status.state.value}: {status.message}", file=sys.stderr)
    return times, states


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=21, help="submits to time (default 21)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    home = tempfile.mkdtemp(prefix="px-bench-submit-")
    os.environ["PX_HOME"] = home
    try:
        measure(2)  # warm the imports and the page cache; not counted
        times, states = measure(args.count)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    median = statistics.median(times)
    figures = {
        "count": args.count,
        "median_ms": round(median, 1),
        "min_ms": round(min(times), 1),
        "max_ms": round(max(times), 1),
        "succeeded": states.count("Succeeded"),
    }
    print(
        f"submit(): median {median:.1f} ms, min {min(times):.1f}, max {max(times):.1f} over {args.count} submits; "
        f"{states.count('Succeeded')}/{args.count} runs succeeded (target: median under {TARGET_MS:g} ms)"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    ok = median < TARGET_MS and states.count("Succeeded") == args.count
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
