"""Metrics reach the run store: one file per process of a replica, nothing dropped by a failed
write, bounded batches and a bounded queue under a flood. Real replica processes throughout."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import make_replica_folders

from jupyter_px.runstore.layout import RunPaths
from jupyter_px.runstore.ledger import replica_ledgers
from jupyter_px.runstore.metrics import MetricsReader

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def paths(tmp_path) -> RunPaths:
    return RunPaths("run-1", tmp_path)


def replica_env(paths: RunPaths, *, tensorboard: bool = True, **extra: str) -> dict[str, str]:
    make_replica_folders(paths, "worker", 0)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PX_") and k != "LOCAL_RANK"}
    env.update(
        PYTHONPATH=str(REPO),
        PX_RUN_ID=paths.run_id,
        PX_TASK_TYPE="worker",
        PX_TASK_INDEX="0",
        PX_CLUSTER=json.dumps({"worker": ["127.0.0.1:1"]}),
        PX_METRICS_PATH=str(paths.metrics("worker", 0)),
        PX_PARAMS_PATH=str(paths.params("worker", 0)),
    )
    if tensorboard:
        env["PX_TENSORBOARD_PATH"] = str(paths.tensorboard("worker", 0))
    env.update(extra)
    return env


def start(script: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def steps_in(path: Path) -> list[int]:
    return [json.loads(line)["step"] for line in path.read_text().splitlines() if line.strip()]


def whole_lines(path: Path) -> tuple[list[int], bytes]:
    """The steps of the file's complete lines (each must parse), and the fragment after the last
    newline: a SIGKILL may cut the batch being written at a page boundary."""
    data = path.read_bytes()
    cut = data.rfind(b"\n") + 1
    return [json.loads(line)["step"] for line in data[:cut].splitlines()], data[cut:]


PROCESS_OF_A_REPLICA = """
import os
from jupyter_px import tracking
rank = int(os.environ["LOCAL_RANK"])
tracking.FLUSH_INTERVAL_S = 0.01          # many small appends, so that they would interleave
for i in range(300):
    tracking.log_params(**{f"p{rank}_{i}": i})    # a read-modify-write per call
    tracking.log_metrics(step=i, loss=rank + i / 1000)
"""


def test_processes_of_one_replica_write_their_own_files(paths):
    """Two local ranks with the replica's PX_METRICS_PATH / PX_PARAMS_PATH (what the runner
    gives them): no lost params, no interleaved series; the reader shows one series each."""
    procs = [start(PROCESS_OF_A_REPLICA, replica_env(paths, LOCAL_RANK=str(rank))) for rank in (0, 1)]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    assert sorted(p.name for p in paths.metrics_dir.glob("*.jsonl")) == ["worker-0.jsonl", "worker-0.rank1.jsonl"]
    # each process kept its own ledger: what it accepted, all of it written, nothing dropped
    ledgers = replica_ledgers(paths.metrics_dir, "worker-0")
    assert sorted(ledger.metrics_file.name for ledger in ledgers) == ["worker-0.jsonl", "worker-0.rank1.jsonl"]
    assert [(ledger.accepted, ledger.written, ledger.dropped) for ledger in ledgers] == [(300, 300, 0)] * 2
    reader = MetricsReader(paths)
    reader.poll()
    assert reader.replicas() == ["worker-0", "worker-0.rank1"]
    for replica, rank in (("worker-0", 0), ("worker-0.rank1", 1)):
        series = reader.series(replica, "loss")
        assert series.steps == list(range(300)), replica
        assert list(series.values) == [rank + i / 1000 for i in range(300)]
    params = reader.params()
    assert params["worker-0"] == {f"p0_{i}": i for i in range(300)}
    assert params["worker-0.rank1"] == {f"p1_{i}": i for i in range(300)}
    # tracking's own event files: one TensorBoard run per process
    tb = paths.tensorboard("worker", 0)
    assert len([p for p in tb.iterdir() if p.is_file()]) == 1 and len(list((tb / "rank1").iterdir())) == 1


def test_a_failed_write_keeps_the_points_until_a_later_write_succeeds(paths):
    """The file-size limit makes the write fail part-way (a real EFBIG); the points stay
    queued, and once writing works again every point is in the file once, in order."""
    proc = start(
        """
        import resource, signal
        from jupyter_px import tracking
        tracking.FLUSH_INTERVAL_S = 3600          # only our flush() calls write
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, hard))
        for i in range(100):
            tracking.log_metrics(step=i, loss=float(i))
        try:
            tracking.flush()
            print("flushed")
        except OSError as error:
            print("failed", error.errno)
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        tracking.flush()
        """,
        replica_env(paths, tensorboard=False),
    )
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.split()[0] == "failed"
    reader = MetricsReader(paths)
    with pytest.warns(RuntimeWarning, match="not a JSON object"):  # the line the failed write cut short
        reader.poll()
    assert reader.series("worker-0", "loss").steps == list(range(100))


def test_a_failed_flush_on_sigterm_is_said_on_stderr(paths):
    proc = start(
        """
        import time
        from jupyter_px import tracking
        tracking.FLUSH_INTERVAL_S = 3600
        for i in range(10):
            tracking.log_metrics(step=i, loss=float(i))
        print("ready", flush=True)
        time.sleep(60)
        """,
        replica_env(paths, tensorboard=False, PX_METRICS_PATH="/dev/full"),  # every write: ENOSPC
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGTERM
    assert "could not write 10 metric points before exiting on SIGTERM" in err, err


def test_a_full_queue_drops_new_points_and_says_so_once(paths):
    proc = start(
        """
        from jupyter_px import tracking
        tracking.FLUSH_INTERVAL_S = 3600
        tracking.MAX_QUEUED_POINTS = 1000         # read when the process's tracker starts
        for i in range(5000):
            tracking.log_metrics(step=i, loss=float(i))
        """,
        replica_env(paths, tensorboard=False),
    )
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert steps_in(paths.metrics("worker", 0)) == list(range(1000))  # the oldest, in order
    assert err.count("are dropped") == 1, err
    assert "4000 metric points were dropped in all" in err


def test_flushes_from_a_signal_handler_amid_calls_keep_each_step_with_its_values(paths):
    """A signal handler that flushes (as a checkpoint on SIGTERM would) interrupts `log_metrics`
    between any two of its bytecodes, between queueing a point's values and its stamp included:
    every line still has its own step's values, and none is lost or written twice."""
    proc = start(
        """
        import signal
        from jupyter_px import tracking
        signal.signal(signal.SIGALRM, lambda *_: tracking.flush())
        signal.setitimer(signal.ITIMER_REAL, 0.0003, 0.0003)
        for i in range(100000):
            tracking.log_metrics(step=i, loss=float(i))
        signal.setitimer(signal.ITIMER_REAL, 0)
        """,
        replica_env(paths, tensorboard=False),
    )
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()  # a flush that spins must not outlive the test
    assert proc.returncode == 0, err
    assert "could not write" not in err, err  # every flush, the background thread's too, went through
    lines = [json.loads(line) for line in paths.metrics("worker", 0).read_text().splitlines()]
    assert [line["step"] for line in lines] == list(range(100000))
    assert [line["step"] for line in lines if line["metrics"]["loss"] != line["step"]] == []


def test_the_background_writer_flushes_while_the_loop_logs_without_a_failed_write(paths):
    """The writer thread takes points off the queue while the training loop adds more: it must
    never see the queue change under it (a deque read item by item in Python raises "deque
    mutated during iteration" when another thread appends meanwhile)."""
    proc = start(
        """
        import sys
        from jupyter_px import tracking
        tracking.FLUSH_INTERVAL_S = 0.005       # many flushes while the loop runs
        tracking.MAX_QUEUED_POINTS = 10_000_000  # none dropped
        sys.setswitchinterval(1e-5)             # the two threads take turns often
        for i in range(200_000):
            tracking.log_metrics(step=i, loss=float(i))
        print(i + 1, flush=True)
        """,
        replica_env(paths, tensorboard=False),
    )
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "could not write" not in err, err
    assert steps_in(paths.metrics("worker", 0)) == list(range(int(out)))


@pytest.mark.jobs
def test_a_flood_then_sigkill_keeps_what_was_written_in_batches(paths):
    """A tight loop for 1.3 s, then SIGKILL (no exit hook runs): the batches the background
    writer finished are on disk, oldest first and whole; only the batch being written when the
    kill came may end in a fragment."""
    proc = start(
        """
        import os, signal, time
        from jupyter_px import tracking
        end, i = time.monotonic() + 1.3, 0
        metrics = os.environ["PX_METRICS_PATH"]
        # 1.3 s at least, and until the writer has finished a batch (on a loaded machine its
        # thread may not have run yet, or only opened the file): the kill must find something
        # written to check
        def written():
            return os.path.exists(metrics) and os.path.getsize(metrics) > 0
        while time.monotonic() < end or (not written() and time.monotonic() < end + 60):
            tracking.log_metrics(step=i, loss=float(i))
            i += 1
        print(i, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """,
        replica_env(paths),
    )
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL, err
    logged = int(out)
    steps, _fragment = whole_lines(paths.metrics("worker", 0))
    assert steps and steps == list(range(len(steps))) and len(steps) <= logged


def test_a_restarted_replica_starts_its_lines_after_a_torn_one(paths):
    """A replica restarted after such a kill appends to the same file: its first line starts on
    a line of its own, so every one of its lines parses."""
    metrics = paths.metrics("worker", 0)
    metrics.parent.mkdir(parents=True, exist_ok=True)
    earlier_attempt = b'{"step":0,"time":1.0}\n{"step":'  # a whole line, then what the kill left
    metrics.write_bytes(earlier_attempt)
    restarted = start(
        """
        from jupyter_px import tracking
        for i in range(3):
            tracking.log_metrics(step=1000000 + i, loss=1.0)
        """,
        replica_env(paths),
    )
    _, err = restarted.communicate(timeout=60)
    assert restarted.returncode == 0, err
    lines = metrics.read_bytes().splitlines()
    assert [json.loads(line)["step"] for line in lines[-3:]] == [1000000, 1000001, 1000002]
    assert lines[-4] == b'{"step":'  # a line of its own, which readers skip


@pytest.mark.jobs
def test_a_real_run_with_two_processes_per_replica_keeps_both_series(tmp_path, monkeypatch):
    """The local backend and the runner: torchrun-style local ranks of one replica."""
    from jupyter_px.api import submit

    monkeypatch.setenv("PX_HOME", str(tmp_path / "home"))
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(
            """
            import os
            from jupyter_px import tracking
            rank = int(os.environ["LOCAL_RANK"])
            for i in range(200):
                tracking.log_params(**{f"p{rank}_{i}": i})
                tracking.log_metrics(step=i, total_steps=200, loss=rank + i / 1000)
            """
        )
    )
    topology = {"framework": "pytorch", "environment": {"processes_per_replica": 2}}
    run = submit(script, topology)
    status = run.wait(timeout=240, poll=0.1)
    assert status.state.value == "Succeeded", status
    data = run.metrics()
    assert sorted(data) == ["master-0", "master-0.rank1"]
    for replica, rank in (("master-0", 0), ("master-0.rank1", 1)):
        assert data[replica]["loss"].steps == list(range(200))
        assert list(data[replica]["loss"].values) == [rank + i / 1000 for i in range(200)]
    reader = MetricsReader(run.paths)
    assert reader.params() == {
        "master-0": {f"p0_{i}": i for i in range(200)},
        "master-0.rank1": {f"p1_{i}": i for i in range(200)},
    }
    reader.poll()
    assert reader.progress("master-0.rank1") == (199, 200)


def test_settling_a_batch_a_kill_cut_short_keeps_its_whole_lines_and_counts_the_rest_lost(paths):
    """What a SIGKILL during a batch's write leaves (the kernel stops a large write at a page
    boundary): some of the batch's lines whole, then a fragment, and a ledger that counts none of
    the batch written. Settling keeps the whole lines as written points (TensorBoard catches up
    with them), cuts the fragment off, and counts only the rest as lost."""
    import mmap

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from jupyter_px.runstore import ledger as ledgers
    from jupyter_px.runstore.settle import settle_replica

    replica = start(
        """
        from jupyter_px import tracking
        for i in range(5):
            tracking.log_metrics(step=i, loss=float(i))
        """,
        replica_env(paths),
    )
    _, err = replica.communicate(timeout=60)
    assert replica.returncode == 0, err
    metrics = paths.metrics("worker", 0)
    # the next batch, steps 5 to 8, accepted and cut short while it was written
    with open(metrics, "ab") as jsonl:
        jsonl.write(b'{"step":5,"time":5.0,"metrics":{"loss":5.0}}\n{"step":6,"time":6.0,"metrics":{"loss":6.0}}\n')
        jsonl.write(b'{"step":7,"ti')
    with open(ledgers.ledger_path(metrics), "r+b") as file, mmap.mmap(file.fileno(), 0) as shared:
        counts = memoryview(shared).cast("q")
        counts[ledgers.ACCEPTED] += 4
        counts.release()

    settled = settle_replica(paths, "worker", 0)

    assert metrics.read_bytes().endswith(b"\n")  # the fragment is gone
    assert steps_in(metrics) == list(range(7))
    accumulator = EventAccumulator(str(paths.tensorboard("worker", 0)), size_guidance={"scalars": 0})
    accumulator.Reload()
    assert sorted(event.step for event in accumulator.Scalars("loss")) == list(
        range(7)
    )  # 5 and 6 in a file of their own
    assert (settled.lost, settled.repaired) == (2, 2), settled
