"""Cost of `jupyter_px.tracking.log_metrics` against TensorBoard writers, and of reading metrics back.

    python benchmarks/bench_tracking.py [--calls 100000] [--repeats 5]

Measures, on this machine:
  1. the per-call cost of `log_metrics(step=i, loss=x)` vs tensorboardX's and torch's
     `SummaryWriter.add_scalar(tag, x, i)`, same number of calls, median over repeats; and, to
     show where the work went, the cost per point including the background serialisation
     (calls + `flush()`) for ours and (calls + `flush()`) for theirs; and ours again with the
     event records' checksums in TensorBoard's pure Python (without google-crc32c);
  2. how long after a replica's last call its last scalar is visible to TensorBoard (an
     EventAccumulator reloading the replica's log directory, and a real TensorBoard server's
     scalars route, reload interval 1 s): for 1000 points logged over one second (the bound
     is checked on this one) and for a burst of `--calls` points logged as fast as possible;
  3. `MetricsReader` on a run of 64 replicas and 100k points: first full read, and a poll when
     nothing was appended;
  4. `Run.metrics()` of one replica with 1,000,000 points (what a notebook does after a long run):
     time and peak memory, in a fresh process (`--read-only` runs just this part).
Exits 1 if log_metrics is not at least 10x cheaper per call than tensorboardX's add_scalar, or
if the scalars are not visible within 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TARGET_RATIO = 10.0
VISIBLE_WITHIN_S = 2.0


def median_per_call(fn, calls: int, repeats: int) -> float:
    """Median over `repeats` of (time of `calls` calls) / calls, in microseconds."""
    samples = []
    for _ in range(repeats):
        samples.append(fn(calls) / calls * 1e6)
    return statistics.median(samples)


def bench_ours(calls: int, repeats: int) -> tuple[float, float]:
    from jupyter_px import tracking

    def loop(n: int) -> float:
        log = tracking.log_metrics
        start = time.perf_counter()
        for i in range(n):
            log(step=i, loss=0.5)
        elapsed = time.perf_counter() - start
        tracking.flush()  # do not let one repeat's background work land in the next one
        return elapsed

    def loop_and_flush(n: int) -> float:
        log = tracking.log_metrics
        start = time.perf_counter()
        for i in range(n):
            log(step=i, loss=0.5)
        tracking.flush()
        return time.perf_counter() - start

    loop(1000)  # first call: imports, files, thread
    return median_per_call(loop, calls, repeats), median_per_call(loop_and_flush, calls, repeats)


def bench_writer(make_writer, calls: int, repeats: int, workdir: Path) -> tuple[float, float]:
    counter = iter(range(1 << 30))

    def run(n: int, include_flush: bool) -> float:
        writer = make_writer(str(workdir / f"w{next(counter)}"))
        add = writer.add_scalar
        start = time.perf_counter()
        for i in range(n):
            add("loss", 0.5, i)
        if include_flush:
            writer.flush()
        elapsed = time.perf_counter() - start
        writer.close()
        return elapsed

    return (
        median_per_call(lambda n: run(n, False), calls, repeats),
        median_per_call(lambda n: run(n, True), calls, repeats),
    )


REPLICA = """
import sys, time
from jupyter_px import tracking
n, pace = int(sys.argv[1]), float(sys.argv[2])
start = time.time()
for i in range(n):
    tracking.log_metrics(step=i, loss=1.0 / (i + 1))
    if pace and i % 100 == 99:            # spread the calls over `pace` seconds
        time.sleep(max(0.0, start + pace * (i + 1) / n - time.time()))
print(repr(time.time()), flush=True)      # when the last call returned
time.sleep(30)                            # stay alive: visibility must not rely on the exit flush
"""


def warm_up_event_accumulator(home: Path) -> None:
    """The first event file an EventAccumulator opens imports TensorFlow (where installed):
    seconds of holding the GIL that would otherwise be counted as latency."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.compat.proto import event_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(home / "warm-up"))
    writer.add_event(event_pb2.Event(step=0))
    writer.close()
    EventAccumulator(str(home / "warm-up")).Reload()


def visibility(home: Path, run_id: str, points: int, pace: float) -> tuple[float, float]:
    """Seconds from a replica's last `log_metrics` call until (EventAccumulator, TensorBoard server)
    show that point. The replica is a separate process; the server was started before it."""
    import subprocess

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from jupyter_px import tensorboard
    from jupyter_px.runstore.layout import RunPaths

    paths = RunPaths(run_id, home)
    logdir = paths.tensorboard("worker", 0)
    logdir.mkdir(parents=True)
    paths.metrics("worker", 0).parent.mkdir(parents=True)  # as the run's owner makes it, before its replicas start
    server = tensorboard.start(run_id, timeout=120, home=home)
    if isinstance(server, tensorboard.Failed):
        raise RuntimeError(f"TensorBoard did not start: {server.reason}\n{server.output}")
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO),
        PX_RUN_ID=run_id,
        PX_TASK_TYPE="worker",
        PX_TASK_INDEX="0",
        PX_METRICS_PATH=str(paths.metrics("worker", 0)),
        PX_TENSORBOARD_PATH=str(logdir),
    )
    replica = subprocess.Popen(
        [sys.executable, "-c", REPLICA, str(points), str(pace)], env=env, stdout=subprocess.PIPE, text=True
    )
    seen: dict[str, float] = {}

    def watch(name: str, last_step_visible) -> None:
        """Poll one reader in its own thread (a slow one must not delay the other), from the
        start, so that it keeps up with the replica as a live TensorBoard does."""
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if last_step_visible():
                    seen[name] = time.time()
                    return
            except OSError:
                pass
            time.sleep(0.02)

    accumulator = EventAccumulator(str(logdir), size_guidance={"scalars": 0})

    def in_accumulator() -> bool:
        accumulator.Reload()  # incremental: reads what was appended since the last call
        return "loss" in accumulator.Tags()["scalars"] and accumulator.Scalars("loss")[-1].step == points - 1

    route = server.info.local_url + "data/plugin/scalars/scalars?run=worker-0&tag=loss"

    def in_server() -> bool:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(route, timeout=5) as response:
            served = json.loads(response.read())
        return bool(served) and served[-1][1] == points - 1

    watchers = [
        threading.Thread(target=watch, args=("acc", in_accumulator)),
        threading.Thread(target=watch, args=("server", in_server)),
    ]
    for watcher in watchers:
        watcher.start()
    assert replica.stdout is not None
    try:
        seen["t_last"] = float(replica.stdout.readline())
        for watcher in watchers:
            watcher.join()
        return (seen.get("acc", float("inf")) - seen["t_last"], seen.get("server", float("inf")) - seen["t_last"])
    finally:
        replica.kill()
        replica.wait()
        tensorboard.stop(server.info.key, home=home)


def bench_reader(home: Path, replicas: int = 64, points: int = 100_000, repeats: int = 5) -> dict[str, float]:
    from jupyter_px import tracking
    from jupyter_px.runstore.layout import RunPaths
    from jupyter_px.runstore.metrics import MetricsReader
    from jupyter_px.tracking.lines import json_line

    paths = RunPaths("bench-reader", home)
    paths.metrics_dir.mkdir(parents=True)
    per_replica = points // replicas
    now = time.time()
    for r in range(replicas):
        # the same bytes tracking writes: one JSON line per call
        lines = [json_line(i, now + i * 0.01, per_replica, {"loss": 1.0 / (i + 1)}) for i in range(per_replica)]
        paths.metrics("worker", r).write_text("\n".join(lines) + "\n")
        tb = paths.tensorboard("worker", r)
        tb.mkdir(parents=True)
        (tb / f"events.out.tfevents.0.host.{r}.0{tracking.EVENTS_FILE_SUFFIX}").write_bytes(b"")

    def first_read() -> float:
        reader = MetricsReader(paths)
        start = time.perf_counter()
        new = reader.poll()
        elapsed = time.perf_counter() - start
        assert sum(len(s) for s in new.values()) == per_replica * replicas
        return elapsed

    def empty_polls(n: int = 50) -> float:
        reader = MetricsReader(paths)
        reader.poll()
        samples = []
        for _ in range(n):
            start = time.perf_counter()
            assert reader.poll() == {}
            samples.append(time.perf_counter() - start)
        return statistics.median(samples)

    first = statistics.median(first_read() for _ in range(repeats))
    fresh = empty_polls()  # directories modified < 2 s ago are listed again on every poll
    time.sleep(2.1)
    settled = empty_polls()
    return {
        "points": per_replica * replicas,
        "first_ms": first * 1e3,
        "empty_fresh_ms": fresh * 1e3,
        "empty_ms": settled * 1e3,
    }


READ_ALL = """
import resource, sys, time
from jupyter_px.api import Run
run = Run(sys.argv[1])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start, cpu = time.perf_counter(), time.process_time()
data = run.metrics()
elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
assert len(data["worker-0"]["loss"]) == int(sys.argv[2]), len(data["worker-0"]["loss"])
print(elapsed, cpu, (peak - base) / 1024)
"""


def bench_read_all(home: Path, points: int = 1_000_000, repeats: int = 3) -> tuple[float, float, float]:
    """(seconds, CPU seconds, MiB of peak RSS growth) of `Run.metrics()` over one replica's
    `points` points, each in a fresh interpreter (median of `repeats`). CPU time is the steadier
    figure on a shared machine."""
    import subprocess

    from jupyter_px.runstore import RunRecord, RunStore
    from jupyter_px.tracking.lines import json_line

    store = RunStore(home)
    paths = store.create(RunRecord(run_id="bench-read-all", topology={"framework": "pytorch"}), {"main.py": ""})
    now = time.time()
    with open(paths.metrics("worker", 0), "w") as handle:
        for start in range(0, points, 10_000):
            lines = (
                json_line(i, now + i * 0.001, points, {"loss": 1.0 / (i + 1)})
                for i in range(start, min(points, start + 10_000))
            )
            handle.write("\n".join(lines) + "\n")
    env = dict(os.environ, PX_HOME=str(home), PYTHONPATH=str(REPO))
    samples = []
    for _ in range(repeats):
        done = subprocess.run(
            [sys.executable, "-c", READ_ALL, "bench-read-all", str(points)], env=env, capture_output=True, text=True
        )
        if done.returncode:
            raise RuntimeError(done.stderr)
        samples.append(tuple(float(x) for x in done.stdout.split()))
    return tuple(statistics.median(column) for column in zip(*samples, strict=True))


def read_all_line(seconds: float, cpu: float, mib: float) -> str:
    return (
        f"Run.metrics() of 1,000,000 points: {seconds:.2f} s ({cpu:.2f} s CPU), peak RSS +{mib:.0f} MiB (median of 3)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--read-only", action="store_true", help="only part 4 (Run.metrics() of 1M points)")
    args = parser.parse_args()

    if args.read_only:
        with tempfile.TemporaryDirectory(prefix="px-bench-") as tmp:
            print(read_all_line(*bench_read_all(Path(tmp))))
        return 0

    with tempfile.TemporaryDirectory(prefix="px-bench-") as tmp:
        home = Path(tmp)
        os.environ["PX_HOME"] = str(home)
        from jupyter_px.runstore.layout import RunPaths

        run = RunPaths("bench", home)
        os.environ.update(
            PX_RUN_ID="bench",
            PX_TASK_TYPE="worker",
            PX_TASK_INDEX="0",
            PX_CLUSTER='{"worker":["127.0.0.1:1"]}',
            PX_METRICS_PATH=str(run.metrics("worker", 0)),
            PX_PARAMS_PATH=str(run.params("worker", 0)),
            PX_OUTPUTS_PATH=str(run.outputs_dir),
            PX_TENSORBOARD_PATH=str(run.tensorboard("worker", 0)),
        )
        run.root.mkdir(parents=True)
        # as the run's owner makes them before its replicas start: tracking never makes them
        run.metrics("worker", 0).parent.mkdir()
        run.tensorboard("worker", 0).mkdir(parents=True)

        reader = bench_reader(home)  # first, while the process holds no TensorFlow or torch
        read_all = bench_read_all(home)

        print(
            f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs; "
            f"{args.calls} calls, median of {args.repeats}"
        )
        ours, ours_flushed = bench_ours(args.calls, args.repeats)
        # the same with TensorBoard's pure-Python CRC framing the event records (what tracking
        # used before google-crc32c, and what a pod without it still uses)
        from jupyter_px.runstore import record_crc

        in_c, record_crc.masked_crc32c = record_crc.masked_crc32c, record_crc._masked_in_python
        python_crc, python_crc_flushed = bench_ours(args.calls, args.repeats)
        record_crc.masked_crc32c = in_c

        # Visibility: 1000 points logged over 1 s (a fast training loop), and a burst of --calls.
        warm_up_event_accumulator(home)
        steady_acc, steady_server = visibility(home, "bench-steady", 1000, 1.0)
        burst_acc, burst_server = visibility(home, "bench-burst", args.calls, 0.0)

        from tensorboardX import SummaryWriter as TbxWriter
        from torch.utils.tensorboard import SummaryWriter as TorchWriter

        tbx, tbx_flushed = bench_writer(TbxWriter, args.calls, args.repeats, home / "tbx")
        torch_, torch_flushed = bench_writer(TorchWriter, args.calls, args.repeats, home / "torch")

    ratio_tbx, ratio_torch = tbx / ours, torch_ / ours
    print()
    print("| per point, µs (median)                 | call only | call + flush to disk |")
    print("|----------------------------------------|----------:|---------------------:|")
    print(f"| jupyter_px.tracking.log_metrics         | {ours:9.2f} | {ours_flushed:20.2f} |")
    print(f"| the same, TensorBoard's Python CRC      | {python_crc:9.2f} | {python_crc_flushed:20.2f} |")
    print(f"| tensorboardX SummaryWriter.add_scalar   | {tbx:9.2f} | {tbx_flushed:20.2f} |")
    print(f"| torch.utils.tensorboard add_scalar      | {torch_:9.2f} | {torch_flushed:20.2f} |")
    print()
    print(
        f"call-cost ratio: tensorboardX / ours = {ratio_tbx:.1f}x, torch / ours = {ratio_torch:.1f}x "
        f"(target >= {TARGET_RATIO:.0f}x vs tensorboardX)"
    )
    print("seconds from the last call until the last point is visible:")
    print(
        f"  1000 points over 1 s:         EventAccumulator {steady_acc:.2f} s, "
        f"TensorBoard server (reload 1 s) {steady_server:.2f} s  (bound {VISIBLE_WITHIN_S:.0f} s)"
    )
    print(
        f"  burst of {args.calls} in one go: EventAccumulator {burst_acc:.2f} s, "
        f"TensorBoard server (reload 1 s) {burst_server:.2f} s  (informative)"
    )
    print(
        f"MetricsReader, 64 replicas, {reader['points']} points: first read {reader['first_ms']:.1f} ms; "
        f"poll with nothing new {reader['empty_ms']:.2f} ms "
        f"({reader['empty_fresh_ms']:.2f} ms while directories are < 2 s old)"
    )

    print(read_all_line(*read_all))

    failures = []
    if ratio_tbx < TARGET_RATIO:
        failures.append(f"log_metrics is only {ratio_tbx:.1f}x cheaper than tensorboardX add_scalar")
    if max(steady_acc, steady_server) > VISIBLE_WITHIN_S:
        failures.append(f"scalars took {max(steady_acc, steady_server):.2f} s to become visible")
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
