"""The Slurm backend against the same job written by hand, and against submitit, on a real cluster.

    python benchmarks/bench_slurm.py [--rounds 5] [--replicas 4 16 32] [--no-submitit] [--per-task]

Starts a Slurm cluster on this machine (`tests/slurm_cluster`: 4 slurmd nodes of 8 CPUs, with
accounting, which submitit's job watcher reads through `sacct`), then, rounds interleaved, for N
replicas of one CPU and 100 MiB each, measures each way as a whole process, the way a user runs it:

* jupyter-px: `jupyter px run task.py -f topology.yaml --backend slurm --wait` (PyTorch topology,
  master + N-1 workers: the environment contract, a port and a rendezvous per task, the runner);
* with `--per-task`, the same with a task per replica (`launcher: task`: each its own
  interpreter), as before the node launcher;
* by hand: `sbatch --wait job.sh`, the script holding `#SBATCH --ntasks=N --cpus-per-task=1
  --mem-per-cpu=100M` and `srun python task.py`;
* submitit (when it is installed: `pip install submitit`): a Python process that submits a
  function with `AutoExecutor` (N tasks) and waits for its results.

Every task's code writes the time it started into a folder; "every task running" is the latest of
those minus the command's start, "finished" is when the command returned. Medians of `--rounds`
(one round first, unmeasured, warms the caches and proves the run store shared). Goal (issue 28):
jupyter-px within 1.2x of by hand (issue 40: at 16 replicas). Exits non-zero when a median
ratio is above it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

GOAL = 1.2
#: jupyter-px with a task (and an interpreter) per replica, as before the node launcher
PER_TASK = "jupyter-px, a task per replica"
WAY_ENV = {PER_TASK: {"PX_SLURM_LAUNCHER": "task"}}
TASK = textwrap.dedent("""\
    import os, time
    started = time.time()
    me = os.environ.get("SLURM_PROCID", "?") + "-" + str(os.getpid())
    with open(os.path.join(os.environ["BENCH_STAMPS"], me), "w") as handle:
        handle.write(repr(started))
    """)
SUBMITIT = textwrap.dedent("""\
    import os, sys, time, submitit

    def task(folder):
        started = time.time()
        with open(os.path.join(folder, os.environ.get("SLURM_PROCID", "?") + "-" + str(os.getpid())), "w") as handle:
            handle.write(repr(started))

    executor = submitit.AutoExecutor(folder=sys.argv[1], cluster="slurm")
    executor.update_parameters(slurm_ntasks_per_node=int(sys.argv[2]), slurm_nodes=int(sys.argv[3]),
                               slurm_cpus_per_task=1, slurm_mem_per_cpu=100, timeout_min=10)
    job = executor.submit(task, os.environ["BENCH_STAMPS"])
    job.results()
    """)


def topology(replicas: int) -> str:
    each = "{cpu: 1, memory: 100}"
    return (
        f"framework: pytorch\nbackend: slurm\nenvironment:\n  resources: {each}\n"
        f"  replicas:\n    n_workers: {replicas - 1}\n    default_worker: {{resources: {each}}}\n"
    )


def by_hand(replicas: int, folder: Path) -> str:
    return (
        f"#!/bin/bash\n#SBATCH --ntasks={replicas} --cpus-per-task=1 --mem-per-cpu=100M\n"
        f"#SBATCH --output={folder / 'hand-%j.out'}\n"
        f"srun {sys.executable} {folder / 'task.py'}\n"
    )


def measure(command: list[str], stamps: Path, replicas: int, env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(seconds to every task running, seconds to finished) of one whole command."""
    for old in stamps.iterdir():
        old.unlink()
    start = time.time()
    done = subprocess.run(command, env={**env, "BENCH_STAMPS": str(stamps)}, cwd=cwd, capture_output=True, text=True)
    finished = time.time() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:3])} failed: {done.stderr.strip()[-500:]}")
    times = [float(path.read_text()) for path in stamps.iterdir()]
    if len(times) != replicas:
        raise RuntimeError(f"{' '.join(command[:3])}: {len(times)} of {replicas} tasks ran")
    return max(times) - start, finished


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--replicas", type=int, nargs="*", default=[4, 16, 32])
    parser.add_argument("--no-submitit", action="store_true")
    parser.add_argument(
        "--per-task", action="store_true", help="also jupyter-px with a task per replica (launcher: task)"
    )
    args = parser.parse_args(argv)
    from slurm_cluster import SlurmCluster

    try:
        import submitit  # noqa: F401

        with_submitit = not args.no_submitit
    except ImportError:
        with_submitit = False
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; Slurm cluster starting", flush=True)
    with (
        SlurmCluster(nodes=4, cpus=8, memory_mib=8000, accounting=with_submitit) as cluster,
        tempfile.TemporaryDirectory(prefix="px-bench-slurm-", dir="/tmp") as tmp,
    ):
        folder = Path(tmp)
        folder.chmod(0o755)
        (folder / "task.py").write_text(TASK)
        (folder / "submitit_job.py").write_text(SUBMITIT)
        stamps = folder / "stamps"
        stamps.mkdir()
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PX_"))},
            **cluster.env,
            "PX_HOME": str(folder / "home"),
            "PX_SLURM_CONFIG": str(folder / "none.yaml"),
        }
        jupyter = str(Path(sys.executable).with_name("jupyter"))
        ways: dict[str, dict[int, list[str]]] = {"jupyter-px": {}, "by hand": {}}
        if args.per_task:
            ways[PER_TASK] = {}
        for n in args.replicas:
            (folder / f"topology-{n}.yaml").write_text(topology(n))
            (folder / f"job-{n}.sh").write_text(by_hand(n, folder))
            ways["jupyter-px"][n] = [
                jupyter,
                "px",
                "run",
                "task.py",
                "-f",
                f"topology-{n}.yaml",
                "--wait",
                "--name",
                f"b{n}",
            ]
            ways["by hand"][n] = ["sbatch", "--wait", "--quiet", f"job-{n}.sh"]
            if args.per_task:
                ways[PER_TASK][n] = ways["jupyter-px"][n][:-1] + [f"t{n}"]
        if with_submitit:
            ways["submitit"] = {
                n: [sys.executable, "submitit_job.py", str(folder / "submitit"), str(min(n, 8)), str(-(-n // 8))]
                for n in args.replicas
            }
        results: dict[tuple[str, int], list[tuple[float, float]]] = {}
        for round_ in range(args.rounds + 1):
            for n in args.replicas:
                for way, commands in ways.items():
                    timing = measure(commands[n], stamps, n, {**env, **WAY_ENV.get(way, {})}, folder)
                    if round_:  # round 0 warms up
                        results.setdefault((way, n), []).append(timing)
            print(f"round {round_} done (load {os.getloadavg()[0]:.1f})", flush=True)
    failed = []
    print(f"\nmedians of {args.rounds} rounds (seconds), whole processes; ratio = jupyter-px / the other")
    print("| replicas | way | submit -> every task running | submit -> finished |")
    print("| --- | --- | --- | --- |")
    for n in args.replicas:
        px_running, px_done = (statistics.median(t[i] for t in results[("jupyter-px", n)]) for i in (0, 1))
        for way in ways:
            running, done = (statistics.median(t[i] for t in results[(way, n)]) for i in (0, 1))
            ratios = "" if way == "jupyter-px" else f" ({px_running / running:.2f}x)", f" ({px_done / done:.2f}x)"
            if way == "jupyter-px":
                ratios = ("", "")
            print(f"| {n} | {way} | {running:.2f}{ratios[0]} | {done:.2f}{ratios[1]} |")
            if way == "by hand" and px_done / done > GOAL:  # the default launcher's
                failed.append(f"{n} replicas: submit -> finished {px_done / done:.2f}x by hand (goal {GOAL}x)")
    for problem in failed:
        print(f"FAIL: {problem}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
