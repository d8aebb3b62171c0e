"""Warm replicas: the same 4-process gloo all-reduce job, five ways, rounds interleaved.

    python benchmarks/bench_warm.py              # 7 rounds; --rounds N for more

* `torchrun --standalone --nproc_per_node=4 job.py` (the peer a user would otherwise run);
* `jupyter px run job.py -f four.yaml --wait --cold` (every replica a fresh interpreter);
* `jupyter px run job.py -f four.yaml --wait` warm (forked from the template, which a warm-up
  run started before the first round);
* `%%px_distributed -f four.yaml --wait` warm, in one kernel driven by nbclient: the wall time
  of the cell's execution, as the notebook user waits for it;
* the floor: four processes forked from a process that has already imported torch, each
  initialising gloo and all-reducing, until all four have exited (a long-lived helper process
  does this once per round: what no launcher can beat).

Each command is a whole process, timed from start to exit (the cell: from the execute request
to its reply). The order rotates each round so that every variant sees the same machine. Medians
are reported, with the ratio of warm to torchrun and the difference between warm and the floor,
and the idle template's memory (`jupyter px warm`: resident, its own, proportional). It exits 1
unless every run succeeded and warm is at most TARGET_RATIO of torchrun and within
TARGET_OVER_FLOOR_S of the floor.
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
import textwrap
import time
from pathlib import Path

from notebook_cell import CellKernel
from private_home import private_environ

TARGET_RATIO = 0.2
TARGET_OVER_FLOOR_S = 0.3

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

TOPOLOGY = "framework: pytorch\nenvironment:\n  replicas:\n    n_workers: 3\n"

#: A helper that imports torch once, then per line on stdin forks four ranks that run JOB's
#: collective and prints the seconds until all four have exited.
FLOOR = textwrap.dedent(
    """
    import os, sys, time
    import torch, torch.distributed as dist
    for line in sys.stdin:
        port = int(line)
        start = time.perf_counter()
        pids = []
        for rank in range(4):
            pid = os.fork()
            if pid == 0:
                os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE="4")
                dist.init_process_group("gloo")
                value = torch.tensor([float(rank)])
                dist.all_reduce(value)
                ok = value.item() == 6.0
                dist.destroy_process_group()
                os._exit(0 if ok else 1)
            pids.append(pid)
        codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
        print(f"{time.perf_counter() - start:.4f} {max(codes)}", flush=True)
    """
)


def _bin(name: str) -> str:
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else (shutil.which(name) or name)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Bench:
    def __init__(self, work: Path):
        self.work = work
        (work / "job.py").write_text(JOB)
        (work / "four.yaml").write_text(TOPOLOGY)
        self.env = private_environ(work)
        self.floor = subprocess.Popen(
            [sys.executable, "-c", FLOOR], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=self.env
        )
        self.kernel = None
        self.run_spans: list[float] = []

    def command(self, argv: list[str]) -> tuple[float, bool, str]:
        start = time.perf_counter()
        result = subprocess.run(argv, env=self.env, cwd=self.work, capture_output=True, text=True, check=False)
        return time.perf_counter() - start, result.returncode == 0, (result.stdout + result.stderr)[-1500:]

    def torchrun(self):
        return self.command([_bin("torchrun"), "--standalone", "--nproc_per_node=4", "job.py"])

    def cold(self):
        return self.command([_bin("jupyter"), "px", "run", "job.py", "-f", "four.yaml", "--wait", "--cold"])

    def warm(self):
        seconds, ok, tail = self.command([_bin("jupyter"), "px", "run", "job.py", "-f", "four.yaml", "--wait"])
        launch = self._last_launch()
        self.run_spans.append(self._last_span())
        return seconds, ok and launch.startswith("warm"), tail + f"\nlaunch: {launch}"

    def cli_start(self):
        """What starting the command costs before it does anything (`jupyter px --help`)."""
        return self.command([_bin("jupyter"), "px", "--help"])

    def _last_span(self) -> float:
        """Submission (the run's record) to its final status, of the newest run."""
        runs = sorted((self.work / "px_home" / "runs").iterdir(), key=lambda p: p.stat().st_mtime)
        created = json.loads((runs[-1] / "record.json").read_text())["created_at"]
        return json.loads((runs[-1] / "status.json").read_text())["finished_at"] - created

    def _last_launch(self) -> str:
        runs = sorted((self.work / "px_home" / "runs").iterdir(), key=lambda p: p.stat().st_mtime)
        return json.loads((runs[-1] / "status.json").read_text()).get("launch") or ""

    def floor_round(self):
        assert self.floor.stdin is not None and self.floor.stdout is not None
        start = time.perf_counter()
        self.floor.stdin.write(f"{_free_port()}\n")
        self.floor.stdin.flush()
        reply = self.floor.stdout.readline().split()
        seconds = time.perf_counter() - start
        return seconds, reply[1:] == ["0"], " ".join(reply)

    def start_kernel(self) -> None:
        self.kernel = CellKernel(self.env, self.work, f"%%px_distributed -f {self.work / 'four.yaml'} --wait\n{JOB}")

    def magic(self):
        assert self.kernel is not None
        seconds, ok, _ = self.kernel.run()
        launch = self._last_launch()
        return seconds, ok and launch.startswith("warm"), f"launch: {launch}"

    def close(self) -> None:
        if self.kernel is not None:
            self.kernel.close()
        self.floor.stdin.close()  # type: ignore[union-attr]
        self.floor.wait(timeout=30)


def template_memory(env: dict[str, str]) -> list[dict]:
    shown = subprocess.run(
        [_bin("jupyter"), "px", "warm", "--json"], env=env, capture_output=True, text=True, check=True
    )
    return [entry for entry in json.loads(shown.stdout) if entry.get("running")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="px-bench-warm-"))
    bench = Bench(work)
    variants = {
        "torchrun --standalone": bench.torchrun,
        "jupyter px run --wait --cold": bench.cold,
        "jupyter px run --wait (warm)": bench.warm,
        "%%px_distributed --wait (warm, nbclient)": bench.magic,
        "floor: 4 forks of an imported torch": bench.floor_round,
        "(for comparison) jupyter px --help": bench.cli_start,
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    failures: dict[str, int] = dict.fromkeys(variants, 0)
    try:
        print(f"work dir {work}; {os.cpu_count()} cores; load average {os.getloadavg()}", flush=True)
        start = subprocess.run(
            [_bin("jupyter"), "px", "warm", "start"], env=bench.env, capture_output=True, text=True, check=False
        )
        print(start.stdout.strip() or start.stderr.strip(), flush=True)
        bench.start_kernel()
        names = list(variants)
        for round_no in range(args.rounds):
            order = names[round_no % len(names) :] + names[: round_no % len(names)]
            for name in order:
                seconds, ok, tail = variants[name]()
                times[name].append(seconds)
                failures[name] += not ok
                print(
                    f"  round {round_no + 1}: {name}: {seconds:.2f} s" + ("" if ok else f" FAILED\n{tail}"), flush=True
                )
        memory = template_memory(bench.env)
    finally:
        bench.close()
        subprocess.run([_bin("jupyter"), "px", "warm", "stop"], env=bench.env, capture_output=True, check=False)
    medians = {name: statistics.median(values) for name, values in times.items()}
    torchrun, warm, floor = (
        medians["torchrun --standalone"],
        medians["jupyter px run --wait (warm)"],
        medians["floor: 4 forks of an imported torch"],
    )
    print()
    print(f"| variant, {args.rounds} rounds interleaved | median (s) | min | max | / torchrun | succeeded |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, values in times.items():
        print(
            f"| {name} | {medians[name]:.2f} | {min(values):.2f} | {max(values):.2f} | "
            f"{medians[name] / torchrun:.2f} | {len(values) - failures[name]}/{len(values)} |"
        )
    print()
    print(
        f"warm / torchrun: {warm / torchrun:.3f} (target at most {TARGET_RATIO}); "
        f"warm - floor: {warm - floor:+.2f} s (target at most {TARGET_OVER_FLOOR_S} s)"
    )
    print(
        f"of the warm command: its run, from submission to the final status, median "
        f"{statistics.median(bench.run_spans):.2f} s; the command's own start (`jupyter px --help`) median "
        f"{medians['(for comparison) jupyter px --help']:.2f} s"
    )
    for entry in memory:
        own, standby = entry.get("memory") or {}, entry.get("standby_memory") or {}
        print(
            f"idle template {entry['key']}: {own.get('rss_mib')} MiB resident, {own.get('uss_mib')} MiB its own, "
            f"{own.get('pss_mib')} MiB proportional; its standby owner: {standby.get('uss_mib')} MiB its own"
        )
    shutil.rmtree(work, ignore_errors=True)
    ok = not any(failures.values()) and warm <= TARGET_RATIO * torchrun and warm - floor <= TARGET_OVER_FLOOR_S
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
