"""A real training script, four ranks: `examples/workloads/torch_cnn.py --size tiny`, four ways, rounds
interleaved.

    python benchmarks/bench_workloads.py              # 5 rounds; --rounds N, --size real
    python benchmarks/bench_workloads.py --only cold,warm   # some of the four (the first is the peer
                                                            # without torchrun): warm pace against cold

* `torchrun --standalone --nproc_per_node=4 torch_cnn.py` (the peer a user would otherwise run);
* `jupyter px run torch_cnn.py -f torch.yaml --wait --cold` (every replica a fresh interpreter);
* `jupyter px run torch_cnn.py -f torch.yaml --wait`, warm (forked from the template, which
  `jupyter px warm start` started before the first round);
* `%%px_distributed -t torch --wait` over the script's text, warm, in one kernel driven by
  nbclient (the wall time of the cell, as the notebook user waits for it).

The script is what a researcher runs: a ResNet-style CNN under DistributedDataParallel, a
DataLoader with two worker processes per rank, AdamW, autocast, gradient accumulation,
checkpoints, an evaluation pass, metrics every step. Each command is a whole process, timed from
start to exit. Besides the wall time, every rank reports its pace in its `RESULT` line: the first
training step (it starts the DataLoader's workers), then steps per second, and its peak memory;
and the machine's CPU time during the command (`/proc/stat`, every process: a warm run's replicas
are the template's forks, not the command's children), what a run costs a shared machine.
Reported: medians; warm / torchrun (goal at most 0.2), the magic's / torchrun (goal 0.15), the
training pace under each launcher / under torchrun (goal at least 0.99), the first step warm /
cold (goal at most 1). It exits 1 if a run failed; the goals are reported, not enforced (the
figures in BENCHMARKS.md say which are met and what is left).
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

from notebook_cell import CellKernel
from private_home import private_environ

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ROOT / "examples" / "workloads"
GOALS = {"warm": 0.2, "magic": 0.15, "pace": 0.99}
#: The variants' short names (`--only`), in the order of a round.
SHORT = ("torchrun", "cold", "warm", "magic")
TOPOLOGY = "framework: pytorch\nenvironment:\n  replicas:\n    n_workers: 3\n"


def machine_cpu_s() -> float:
    """The machine's busy CPU seconds so far, every core (user, nice, system, irq, softirq, steal)."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    return (sum(fields[:3]) + sum(fields[5:8])) / os.sysconf("SC_CLK_TCK")


def _bin(name: str) -> str:
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else (shutil.which(name) or name)


def results(text: str) -> list[dict]:
    """Every `RESULT {json}` in a command's output (torchrun's ranks, or `--wait`'s streamed logs).
    Read as JSON values, not lines: torchrun's ranks share one stdout, and two ranks' lines can
    land on one line."""
    decoder, found = json.JSONDecoder(), []
    for part in text.split("RESULT ")[1:]:
        try:
            value, _ = decoder.raw_decode(part)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


class Bench:
    def __init__(self, work: Path, size: str):
        self.work, self.size = work, size
        shutil.copy(WORKLOADS / "torch_cnn.py", work / "torch_cnn.py")
        (work / "four.yaml").write_text(TOPOLOGY)
        self.env = private_environ(work, PYTHONWARNINGS="ignore")
        self.kernel = None

    def command(self, argv: list[str]) -> tuple[float, bool, list[dict], str]:
        start = time.perf_counter()
        out = subprocess.run(argv, env=self.env, cwd=self.work, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - start
        text = out.stdout + out.stderr
        found = results(text)
        return seconds, out.returncode == 0 and len(found) == 4, found, text[-1500:]

    def torchrun(self):
        return self.command(
            [_bin("torchrun"), "--standalone", "--nproc_per_node=4", "torch_cnn.py", "--size", self.size]
        )

    def cold(self):
        argv = [_bin("jupyter"), "px", "run", "torch_cnn.py", "-f", "four.yaml", "--wait", "--cold"]
        return self.command([*argv, "--", "--size", self.size])

    def warm(self):
        argv = [_bin("jupyter"), "px", "run", "torch_cnn.py", "-f", "four.yaml", "--wait"]
        seconds, ok, found, tail = self.command([*argv, "--", "--size", self.size])
        launch = self._last_launch()
        return seconds, ok and launch.startswith("warm"), found, tail + f"\nlaunch: {launch}"

    def _last_run(self) -> Path:
        return sorted((self.work / "px_home" / "runs").iterdir(), key=lambda p: p.stat().st_mtime)[-1]

    def _last_launch(self) -> str:
        return json.loads((self._last_run() / "status.json").read_text()).get("launch") or ""

    def start_kernel(self) -> None:
        script = (self.work / "torch_cnn.py").read_text()
        if self.size != "tiny":
            script = script.replace('default="tiny"', f'default="{self.size}"')
        cell = f"%%px_distributed -f {self.work / 'four.yaml'} --wait\n{script}"
        self.kernel = CellKernel(self.env, self.work, cell, timeout=1200)

    def magic(self):
        assert self.kernel is not None
        seconds, ok, _ = self.kernel.run()
        run = self._last_run()
        found = results("\n".join((run / "logs" / log).read_text() for log in os.listdir(run / "logs")))
        launch = self._last_launch()
        return seconds, ok and launch.startswith("warm") and len(found) == 4, found, f"launch: {launch}"

    def close(self) -> None:
        if self.kernel is not None:
            self.kernel.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--size", choices=("tiny", "real"), default="tiny")
    parser.add_argument("--only", default=",".join(SHORT), help=f"some of {', '.join(SHORT)} (comma-separated)")
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    if not chosen or any(name not in SHORT for name in chosen):
        parser.error(f"--only {args.only!r}: choose among {', '.join(SHORT)}")
    work = Path(tempfile.mkdtemp(prefix="px-bench-workloads-"))
    bench = Bench(work, args.size)
    every = {
        "torchrun": ("torchrun --standalone", bench.torchrun),
        "cold": ("jupyter px run --wait --cold", bench.cold),
        "warm": ("jupyter px run --wait (warm)", bench.warm),
        "magic": ("%%px_distributed --wait (warm, nbclient)", bench.magic),
    }
    variants = dict(every[name] for name in SHORT if name in chosen)
    wall: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    ranks: dict[str, list[dict]] = {name: [] for name in variants}
    failures = dict.fromkeys(variants, 0)
    try:
        print(f"work dir {work}; {os.cpu_count()} cores; load average {os.getloadavg()}", flush=True)
        started = subprocess.run(
            [_bin("jupyter"), "px", "warm", "start"], env=bench.env, capture_output=True, text=True, check=False
        )
        print(started.stdout.strip() or started.stderr.strip(), flush=True)
        if "magic" in chosen:
            bench.start_kernel()
        names = list(variants)
        for round_no in range(args.rounds):
            for name in names[round_no % len(names) :] + names[: round_no % len(names)]:
                before = machine_cpu_s()
                seconds, ok, found, tail = variants[name]()
                cpu[name].append(machine_cpu_s() - before)
                wall[name].append(seconds)
                ranks[name].extend(found)
                failures[name] += not ok
                print(
                    f"  round {round_no + 1}: {name}: {seconds:.2f} s" + ("" if ok else f" FAILED\n{tail}"), flush=True
                )
        print(f"load average after: {os.getloadavg()}")
    finally:
        bench.close()
        subprocess.run([_bin("jupyter"), "px", "warm", "stop"], env=bench.env, capture_output=True, check=False)
    report(args, wall, cpu, ranks, failures)
    shutil.rmtree(work, ignore_errors=True)
    return 0 if not any(failures.values()) else 1


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def report(args, wall, cpu, ranks, failures) -> None:
    """The table, each variant against the peer (torchrun, else the first variant run), then the goals
    the variants run allow to check."""
    torchrun, cold, warm_name = "torchrun --standalone", "jupyter px run --wait --cold", "jupyter px run --wait (warm)"
    magic_name = "%%px_distributed --wait (warm, nbclient)"
    peer = torchrun if torchrun in wall else next(iter(wall))
    short = "torchrun" if peer == torchrun else "cold"
    medians = {name: _median(values) for name, values in wall.items()}
    pace = {name: _median([r["steps_per_s"] for r in found if r.get("steps_per_s")]) for name, found in ranks.items()}
    first = {name: _median([r["first_step_s"] for r in found]) for name, found in ranks.items()}
    rss = {name: _median([r["max_rss_mib"] for r in found]) for name, found in ranks.items()}
    used = {name: _median(values) for name, values in cpu.items()}
    print()
    print(
        f"| torch_cnn.py --size {args.size}, 4 ranks, {args.rounds} rounds interleaved | wall median (s) | min | max "
        f"| / {short} | steps/s per rank | / {short} | first step (s) | peak RSS per rank (MiB) | succeeded "
        f"| machine CPU (s) | / {short} |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, values in wall.items():
        print(
            f"| {name} | {medians[name]:.2f} | {min(values):.2f} | {max(values):.2f} | "
            f"{medians[name] / medians[peer]:.2f} | {pace[name]:.2f} | {pace[name] / pace[peer]:.2f} | "
            f"{first[name]:.2f} | {rss[name]:.0f} | {len(values) - failures[name]}/{len(values)} | "
            f"{used[name]:.2f} | {used[name] / used[peer]:.2f} |"
        )
    print()
    if peer == torchrun and warm_name in wall:
        print(f"warm run / torchrun: {medians[warm_name] / medians[torchrun]:.3f} (goal at most {GOALS['warm']})")
    if peer == torchrun and magic_name in wall:
        ratio = medians[magic_name] / medians[torchrun]
        print(f"%%px_distributed / torchrun: {ratio:.3f} (goal at most {GOALS['magic']})")
    for name in wall:
        if name != peer:
            ratio = pace[name] / pace[peer]
            print(f"training pace under {name} / {short}: {ratio:.3f} (goal at least {GOALS['pace']})")
    if cold in wall and warm_name in wall:
        print(f"first step warm / cold: {first[warm_name] / first[cold]:.2f} (goal at most 1)")


if __name__ == "__main__":
    sys.exit(main())
