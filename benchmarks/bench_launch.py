"""Launch overhead: `jupyter px run --wait` against `torchrun --standalone`, same 4-process job.

    python benchmarks/bench_launch.py            # 5 rounds; --rounds N for more
    python benchmarks/bench_launch.py --wide 256 # a 256-replica run of a trivial script, 3 rounds

The job is one gloo all_reduce across 4 processes (pytorch master + 3 workers for us,
--nproc_per_node=4 for torchrun). Rounds are interleaved (the order alternates each round) so
that both see the same machine state; the figures are medians of wall time per complete
command, from process start to exit. The benchmark fails (exit 1) unless every one of our runs
succeeds and our median is at most TARGET_RATIO of torchrun's.

Why we can be faster: torchrun imports torch in its launcher before it spawns the workers;
our launch path (CLI, supervisor, runner) imports no torch at all, which this script checks
too (`python -X importtime` of every module on the launch path).

`--wide N` measures something else: how long one run of N replicas (workers only, each
printing its index) takes to launch on this machine, as `jupyter px run --wait`: the wall time
of the command, and from the run's status the time from submission until the last replica
was started and until it finished. It fails (exit 1) unless every run succeeds.
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

TARGET_RATIO = 0.95
ROOT = Path(__file__).resolve().parents[1]

JOB = """\
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
value = torch.tensor([float(dist.get_rank())])
dist.all_reduce(value)
assert value.item() == sum(range(dist.get_world_size())), value
print(f"rank {dist.get_rank()}: {value.item():g}", flush=True)
dist.destroy_process_group()
"""

TOPOLOGY = """\
framework: pytorch
environment:
  replicas:
    n_workers: 3
"""

WIDE_JOB = """\
import os
print("replica", os.environ["PX_TASK_INDEX"], flush=True)
"""

LAUNCH_PATH_MODULES = ["jupyter_px.cli", "jupyter_px.api", "jupyter_px.backends.local.supervisor", "jupyter_px.runner"]


def _bin(name: str) -> str:
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else (shutil.which(name) or name)


def _timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int, str]:
    start = time.perf_counter()
    result = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, result.returncode, (result.stdout + result.stderr)[-1500:]


def launch_path_imports_torch() -> list[str]:
    """Modules on our launch path whose import pulls in torch (should be none)."""
    bad = []
    for module in LAUNCH_PATH_MODULES:
        result = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", f"import {module}"], capture_output=True, text=True, check=False
        )
        if any(line.rstrip().endswith((" torch", " tensorflow")) for line in result.stderr.splitlines()):
            bad.append(module)
    return bad


def _bare_interpreters(count: int) -> float:
    """Seconds to start `count` interpreters running WIDE_JOB's print at once and see them exit:
    the floor under any launcher of that many Python processes on this machine."""
    code = "import os; print('replica', os.getpid(), flush=True)"
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL) for _ in range(count)]
    for proc in procs:
        proc.wait()
    return time.perf_counter() - start


def wide(replicas: int, rounds: int) -> int:
    """Launch time of one run with `replicas` replicas (see the module doc)."""
    work = Path(tempfile.mkdtemp(prefix="px-bench-wide-"))
    (work / "job.py").write_text(WIDE_JOB)
    (work / "topology.yaml").write_text(
        f"framework: pytorch\nenvironment:\n  replicas:\n    n_masters: 0\n    n_workers: {replicas}\n"
    )
    home = work / "px_home"
    env = dict(
        os.environ,
        PX_HOME=str(home),
        PYTHONPATH=os.pathsep.join([str(ROOT), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]),
    )
    rows, failed = [], 0
    print(f"{rounds} runs of {replicas} replicas on {os.cpu_count()} cores; work dir {work}", flush=True)
    floors = []
    for round_no in range(rounds):
        name = f"wide{round_no}"
        argv = [_bin("jupyter-px"), "run", "job.py", "-f", "topology.yaml", "--name", name, "--wait"]
        seconds, code, tail = _timed(argv, env, work)
        run_dir = next((home / "runs").glob(f"{name}-*"))
        created = json.loads((run_dir / "record.json").read_text())["created_at"]
        status = json.loads((run_dir / "status.json").read_text())
        started = max(r["started_at"] for r in status["replicas"]) - created
        finished = status["finished_at"] - created
        ok = code == 0 and status["state"] == "Succeeded"
        failed += not ok
        rows.append((seconds, started, finished))
        floors.append(_bare_interpreters(replicas))
        print(
            f"  run {round_no + 1}: wall {seconds:.2f} s, all {replicas} started after {started:.2f} s, "
            f"finished after {finished:.2f} s, {status['state']}" + ("" if ok else f"\n{tail}"),
            flush=True,
        )
    print()
    print(f"| {replicas} replicas, median of {rounds} | seconds |")
    print("| --- | --- |")
    for label, column in zip(
        ("`jupyter px run --wait`, whole command", "submission to the last replica started", "submission to finished"),
        zip(*rows, strict=True),
        strict=True,
    ):
        print(f"| {label} | {statistics.median(column):.2f} |")
    print(f"| for comparison: {replicas} bare `python -c` interpreters started at once, until all exited | ", end="")
    print(f"{statistics.median(floors):.2f} |")
    shutil.rmtree(work, ignore_errors=True)
    return 0 if failed == 0 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="runs of each launcher (default 5, at least 5)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--wide", type=int, metavar="N", help="instead: launch time of one run of N replicas")
    parser.add_argument("--wide-rounds", type=int, default=3, help="runs for --wide (default 3)")
    args = parser.parse_args(argv)
    if args.wide:
        return wide(args.wide, max(1, args.wide_rounds))
    rounds = max(5, args.rounds)

    work = Path(tempfile.mkdtemp(prefix="px-bench-launch-"))
    (work / "allreduce.py").write_text(JOB)
    (work / "topology.yaml").write_text(TOPOLOGY)
    env = dict(
        os.environ,
        PX_HOME=str(work / "px_home"),
        PYTHONPATH=os.pathsep.join([str(ROOT), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]),
    )
    ours_cmd = [_bin("jupyter-px"), "run", "allreduce.py", "-f", "topology.yaml", "--wait"]
    torchrun_cmd = [_bin("torchrun"), "--standalone", "--nproc_per_node=4", "allreduce.py"]
    commands = {"jupyter px run --wait": ours_cmd, "torchrun --standalone": torchrun_cmd}
    times: dict[str, list[float]] = {name: [] for name in commands}
    failures: dict[str, list[str]] = {name: [] for name in commands}

    print(f"{rounds} rounds on {os.cpu_count()} cores, interleaved; work dir {work}", flush=True)
    for round_no in range(rounds):
        order = list(commands) if round_no % 2 == 0 else list(reversed(commands))
        for name in order:
            seconds, code, tail = _timed(commands[name], env, work)
            times[name].append(seconds)
            if code != 0:
                failures[name].append(f"round {round_no + 1}: exit {code}: {tail}")
            print(f"  round {round_no + 1}: {name:24s} {seconds:6.2f} s  exit {code}", flush=True)

    ours, theirs = (statistics.median(times[name]) for name in commands)
    ratio = ours / theirs
    bad_imports = launch_path_imports_torch()
    ok_ours = rounds - len(failures["jupyter px run --wait"])
    ok_theirs = rounds - len(failures["torchrun --standalone"])
    print()
    print("| launcher | median wall (s) | min | max | succeeded |")
    print("| --- | --- | --- | --- | --- |")
    for name, ok in zip(commands, (ok_ours, ok_theirs), strict=False):
        t = times[name]
        print(f"| `{name}` | {statistics.median(t):.2f} | {min(t):.2f} | {max(t):.2f} | {ok}/{rounds} |")
    print(f"\nratio ours/torchrun: {ratio:.3f} (target <= {TARGET_RATIO})")
    print(f"launch-path modules importing torch: {bad_imports or 'none'}")
    for name, items in failures.items():
        for item in items:
            print(f"\n{name} failed, {item}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "rounds": rounds,
                    "times": times,
                    "ratio": ratio,
                    "succeeded": {"ours": ok_ours, "torchrun": ok_theirs},
                    "torch_on_launch_path": bad_imports,
                },
                indent=1,
            )
        )
    shutil.rmtree(work, ignore_errors=True)
    met = ratio <= TARGET_RATIO and ok_ours == rounds and not bad_imports
    print("\nRESULT:", "target met" if met else "target MISSED")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
