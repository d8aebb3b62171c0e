"""Sweeps: per-trial overhead against running the same trials by hand, the controller's start, and
comparing 200 runs of 100,000 points cold and warm.

    python benchmarks/bench_sweep.py                     # all three, 1 round of the overhead
    python benchmarks/bench_sweep.py --rounds 2 --skip-compare
    python benchmarks/bench_sweep.py --compare-runs 200 --compare-points 100000 --store /tmp/px-bench-compare

What is measured, each as the whole command a user runs (a process, from its start to its exit):

* Per-trial overhead: a grid sweep of `--trials` trials, one at a time (concurrency 1), each a
  two-replica PyTorch job (gloo: init, one all_reduce, the loss logged) taking its value as
  `--x={{ x }}`: `jupyter px sweep run trial.py -f sweep.yaml --wait -- --x={{ x }}`, against
  the same trials run one after the other by hand, `jupyter px run trial.py -f job.yaml --wait
  -- --x=<value>` each (the peer a user would otherwise use). Rounds alternate which goes first.
  The ratio is the sweep's wall time over the sum of the runs'; the goal is at most
  `TARGET_RATIO`, in one run of this script (the benchmark exits 1 otherwise).
* The controller's start: `jupyter px sweep run` without `--wait` (it returns once the
  controller is started), then until the controller says Running, then until its first
  trial's run exists; medians of `--starts` sweeps, each stopped once its first trial runs.
* `jupyter_px.compare(pattern="cmp-*")` over `--compare-runs` finished runs of
  `--compare-points` steps of two metrics (the store of `bench_compare.py`, written once under
  `--store`): cold (no digest kept: every point read) and warm (the digests the cold one kept
  on disk), each a fresh `python -c` process; warm is the median of 3.

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

TARGET_RATIO = 1.05
JUPYTER_PX = str(Path(sys.executable).with_name("jupyter-px"))

TRIAL = """\
import sys

import torch
import torch.distributed as dist

from jupyter_px import tracking

x = float(sys.argv[1].split("=", 1)[1])
dist.init_process_group("gloo")
value = torch.tensor([x])
dist.all_reduce(value)
if dist.get_rank() == 0:
    tracking.log_metrics(step=1, loss=(value.item() / dist.get_world_size() - 3) ** 2)
dist.destroy_process_group()
"""

JOB = "framework: pytorch\nenvironment:\n  replicas:\n    n_workers: 1\n"


def sweep_file(trials: int) -> str:
    values = ", ".join(str(i + 1) for i in range(trials))
    return JOB + (
        "hptuning:\n  concurrency: 1\n  grid_search: {}\n"
        f"  matrix:\n    x: {{values: [{values}]}}\n  metric: {{name: loss, optimization: minimize}}\n"
    )


def timed(command: list[str], env: dict[str, str], cwd: Path) -> float:
    return run_timed(command, env, cwd)[0]


def run_timed(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    """(wall seconds of the whole command, its standard output)."""
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=3600)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return elapsed, done.stdout


def overhead_round(work: Path, trials: int, sweep_first: bool) -> dict[str, float]:
    """One sweep of `trials` and the same trials by hand, each in its own fresh PX_HOME."""
    out: dict[str, float] = {}
    script = work / "trial.py"
    script.write_text(TRIAL)
    (work / "sweep.yaml").write_text(sweep_file(trials))
    (work / "job.yaml").write_text(JOB)

    def sweep() -> None:
        env = {**os.environ, "PX_HOME": tempfile.mkdtemp(dir=work, prefix="sweep-home-")}
        command = [
            JUPYTER_PX,
            "sweep",
            "run",
            str(script),
            "-f",
            str(work / "sweep.yaml"),
            "--wait",
            "--",
            "--x={{ x }}",
        ]
        out["sweep_s"] = timed(command, env, work)

    def by_hand() -> None:
        env = {**os.environ, "PX_HOME": tempfile.mkdtemp(dir=work, prefix="hand-home-")}
        walls = [
            timed(
                [JUPYTER_PX, "run", str(script), "-f", str(work / "job.yaml"), "--wait", "--", f"--x={i + 1}"],
                env,
                work,
            )
            for i in range(trials)
        ]
        out["by_hand_s"] = sum(walls)
        out["run_median_s"] = statistics.median(walls)

    for step in (sweep, by_hand) if sweep_first else (by_hand, sweep):
        step()
    out["ratio"] = out["sweep_s"] / out["by_hand_s"]
    return out


def controller_starts(work: Path, count: int) -> dict[str, float]:
    """Medians (s) from `jupyter px sweep run` to: it returned, the controller Running, a trial's run."""
    from jupyter_px.runstore import RunStore

    script = work / "sleepy.py"
    script.write_text("import time\ntime.sleep(60)\n")
    (work / "start.yaml").write_text("hptuning:\n  matrix:\n    x: {values: [1, 2]}\n")
    returned, running, first = [], [], []
    for _ in range(count):
        home = tempfile.mkdtemp(dir=work, prefix="start-home-")
        env = {**os.environ, "PX_HOME": home}
        start = time.perf_counter()
        done = subprocess.run(
            [JUPYTER_PX, "sweep", "run", str(script), "-f", str(work / "start.yaml")],
            env=env, cwd=work, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        returned.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"sweep run failed:\n{done.stderr}")
        sweep_id = done.stdout.split()[0]
        store = RunStore(home).sweeps
        seen_running = None
        while True:
            status = store.status(sweep_id)
            now = time.perf_counter() - start
            if seen_running is None and status.state.value == "Running":
                seen_running = now
            if any(t.run_id for t in status.trials):
                first.append(now)
                break
            if now > 300:
                raise SystemExit(f"sweep {sweep_id} started no trial in 300 s")
            time.sleep(0.01)
        running.append(seen_running if seen_running is not None else first[-1])
        subprocess.run([JUPYTER_PX, "sweep", "stop", sweep_id], env=env, capture_output=True, timeout=300)
    return {
        "command_returned_s": statistics.median(returned),
        "controller_running_s": statistics.median(running),
        "first_trial_run_s": statistics.median(first),
    }


#: The comparison a notebook makes, in a fresh process; prints how long the import and the call took.
COMPARE = (
    "import json, time; start = time.perf_counter(); import jupyter_px, jupyter_px.compare.notebook; "
    "imported = time.perf_counter(); c = jupyter_px.compare(pattern='cmp-*'); "
    "print(json.dumps({'runs': len(c.comparison.runs), 'import_s': imported - start, "
    "'compare_s': time.perf_counter() - imported}))"
)


def compare_cold_warm(store: Path, runs: int, points: int, warm_only: bool = False) -> dict[str, float]:
    """The whole `python -c` process, cold then warm; and, as the process itself timed them,
    importing jupyter_px (with the notebook's comparison) and the `compare` call."""
    from compare_store import ensure_store

    ensure_store(store, runs, points)
    env = {**os.environ, "PX_HOME": str(store)}
    out: dict[str, float] = {}
    if not warm_only:
        shutil.rmtree(store / "cache" / "compare", ignore_errors=True)
        wall, printed = run_timed([sys.executable, "-c", COMPARE], env, store)
        out.update(compare_cold_s=wall, compare_cold_call_s=json.loads(printed)["compare_s"])
    warm = [run_timed([sys.executable, "-c", COMPARE], env, store) for _ in range(3)]
    calls = [json.loads(printed) for _, printed in warm]
    out.update(
        compare_warm_s=statistics.median(wall for wall, _ in warm),
        compare_warm_import_s=statistics.median(c["import_s"] for c in calls),
        compare_warm_call_s=statistics.median(c["compare_s"] for c in calls),
    )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--compare-runs", type=int, default=200)
    parser.add_argument("--compare-points", type=int, default=100_000)
    parser.add_argument("--store", type=Path, default=Path(tempfile.gettempdir()) / "px-bench-compare")
    parser.add_argument("--skip-compare", action="store_true")
    parser.add_argument("--compare-only", action="store_true", help="only the comparison, not the sweeps")
    parser.add_argument("--warm-only", action="store_true", help="the comparison warm only (digests kept before)")
    args = parser.parse_args()

    results: dict[str, object] = {"trials": args.trials, "load_average": os.getloadavg()[0]}
    rounds: list[dict[str, float]] = []
    if not args.compare_only:
        with tempfile.TemporaryDirectory(prefix="px-bench-sweep-") as folder:
            work = Path(folder)
            rounds = [overhead_round(work, args.trials, sweep_first=i % 2 == 0) for i in range(args.rounds)]
            results["rounds"] = rounds
            results["ratio"] = statistics.median(r["ratio"] for r in rounds)
            results.update(controller_starts(work, args.starts))
    if not args.skip_compare:
        results.update(compare_cold_warm(args.store, args.compare_runs, args.compare_points, args.warm_only))
    results["load_average_after"] = os.getloadavg()[0]

    print(f"{'what':62} {'seconds':>10}")
    for i, r in enumerate(rounds):
        print(
            f"{f'round {i + 1}: sweep of {args.trials} trials (jupyter px sweep run --wait)':62} {r['sweep_s']:10.2f}"
        )
        print(
            f"{f'round {i + 1}: the same {args.trials} by hand (jupyter px run --wait each)':62} {r['by_hand_s']:10.2f}"
        )
        print(f"{f'round {i + 1}: ratio':62} {r['ratio']:10.3f}")
    for key in ("command_returned_s", "controller_running_s", "first_trial_run_s"):
        if key in results:
            print(f"{'controller start: ' + key:62} {results[key]:10.2f}")
    for key in (
        "compare_cold_s",
        "compare_cold_call_s",
        "compare_warm_s",
        "compare_warm_import_s",
        "compare_warm_call_s",
    ):
        if key in results:
            print(f"{key:62} {results[key]:10.3f}")
    print(json.dumps(results))
    return 0 if float(results.get("ratio", 0.0)) <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
