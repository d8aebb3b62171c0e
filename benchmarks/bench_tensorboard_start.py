"""A run's TensorBoard, from the click to its first scalars: `tensorboard.start()` against
`tensorboard --logdir` (what a user starts by hand, or `%tensorboard` does), with TensorFlow
installed.

    python benchmarks/bench_tensorboard_start.py [--repeats 5]

Both serve the same logdir: a real run's (3 replicas, 200 steps each, written by
the writer behind `tracking.log_metrics`). Measured per start: the seconds until `/data/plugin/scalars/scalars`
answers the run's loss (the user sees a plot), and the CPU seconds the TensorBoard process spent
until then (its share of a loaded machine). Ours is the whole of `jupyter_px.tensorboard.start`:
the watchdog, TensorBoard under it without TensorFlow (`jupyter_px/tensorboard/serve.py`).
Reports the medians and the ratios. Exits non-zero if ours is not at least 1.5x faster to its
first scalars.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil

STEPS, REPLICAS = 200, 3


def write_run(home: Path) -> str:
    """A run directory with each replica's loss, as the writer behind `tracking.log_metrics`
    writes it."""
    os.environ["PX_HOME"] = str(home)
    from jupyter_px.runstore.event_writer import ScalarEventWriter
    from jupyter_px.runstore.layout import RunPaths

    paths = RunPaths("bench-tb")
    now = time.time()
    for index in range(REPLICAS):
        logdir = paths.tensorboard("worker", index)
        writer = ScalarEventWriter(logdir, "bench", anchor=home)
        writer.write((step, now + step, {"loss": 1.0 / (step + 1)}) for step in range(STEPS))
    return "bench-tb"


def scalars_answer(url: str, run: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}data/plugin/scalars/scalars?run={run}&tag=loss", timeout=5) as answer:
            return len(json.loads(answer.read())) == STEPS
    except OSError:
        return False


def until_scalars(url: str, run: str, deadline: float) -> float:
    while not scalars_answer(url, run):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no scalars from {url}")
        time.sleep(0.05)
    return time.monotonic()


def cpu_of(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system + times.children_user + times.children_system


def by_hand(logdir: Path) -> tuple[float, float]:
    """`tensorboard --logdir LOGDIR`, as a user runs it: (seconds to the first scalars, CPU)."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    started = time.monotonic()
    command = [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--host", "127.0.0.1"]
    child = subprocess.Popen([*command, "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        seen = until_scalars(f"http://127.0.0.1:{port}/", "worker-0", started + 120)
        return seen - started, cpu_of(psutil.Process(child.pid))
    finally:
        child.terminate()
        child.wait()


def ours(run: str) -> tuple[float, float]:
    """`jupyter_px.tensorboard.start(run)`: (seconds to the first scalars, CPU of the watchdog and
    TensorBoard)."""
    from jupyter_px import tensorboard

    started = time.monotonic()
    result = tensorboard.start(run)
    assert isinstance(result, tensorboard.Launched), result
    try:
        seen = until_scalars(result.info.local_url, "worker-0", started + 120)
        watchdog = psutil.Process(result.info.pid)
        return seen - started, cpu_of(watchdog) + sum(cpu_of(child) for child in watchdog.children())
    finally:
        tensorboard.stop(result.info.key)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if importlib.util.find_spec("tensorflow") is None:  # the case measured: an environment that trains with Keras
        print("TensorFlow is not installed: both start without it; nothing to compare")
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        run = write_run(Path(scratch))
        from jupyter_px.runstore.layout import RunPaths

        logdir = RunPaths(run).tensorboard_dir
        hand, mine = [], []
        for _ in range(args.repeats):  # alternated, so a change of the machine's load meets both
            hand.append(by_hand(logdir))
            mine.append(ours(run))
    rows = {"tensorboard --logdir (TensorFlow imported)": hand, "jupyter_px.tensorboard.start": mine}
    print(f"median of {args.repeats}: seconds to the first scalars / CPU seconds")
    for name, samples in rows.items():
        ready = statistics.median(s[0] for s in samples)
        cpu = statistics.median(s[1] for s in samples)
        print(f"  {name:44s} {ready:6.2f} s   {cpu:6.2f} s CPU")
    ratio_ready = statistics.median(s[0] for s in hand) / statistics.median(s[0] for s in mine)
    ratio_cpu = statistics.median(s[1] for s in hand) / statistics.median(s[1] for s in mine)
    print(f"ratio (by hand / ours): {ratio_ready:.1f}x to the first scalars, {ratio_cpu:.1f}x the CPU")
    return 0 if ratio_ready >= 1.5 else 1


if __name__ == "__main__":
    sys.exit(main())
