"""jupyter_px.runstore.metrics: incremental reads of JSONL metrics and of the user's own event files."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

from jupyter_px.runstore.layout import RunPaths
from jupyter_px.runstore.log_metrics import ingest_log_lines, parse_log_metrics
from jupyter_px.runstore.metrics import MetricsReader

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def px_home(tmp_path, monkeypatch):
    monkeypatch.setenv("PX_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def paths(px_home) -> RunPaths:
    paths = RunPaths("run-1")
    paths.metrics_dir.mkdir(parents=True)
    paths.tensorboard_dir.mkdir(parents=True)
    return paths


def line(step, when, total=None, **metrics) -> bytes:
    record = {"step": step, "time": when, "metrics": metrics}
    if total is not None:
        record["total_steps"] = total
    return (json.dumps(record) + "\n").encode()


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def test_reads_only_what_was_appended(paths):
    path = paths.metrics("worker", 0)
    append(path, line(0, 1.0, total=10, loss=0.5, acc=0.1) + line(1, 2.0, loss=0.4))
    reader = MetricsReader(paths)
    new = reader.poll()
    assert set(new) == {("worker-0", "loss"), ("worker-0", "acc")}
    assert new[("worker-0", "loss")].steps == [0, 1]
    assert list(new[("worker-0", "loss")].values) == [0.5, 0.4]
    assert list(new[("worker-0", "loss")].times) == [1.0, 2.0]
    assert reader.poll() == {}

    append(path, line(2, 3.0, loss=0.3))
    new = reader.poll()
    assert list(new) == [("worker-0", "loss")]
    assert (new[("worker-0", "loss")].steps, list(new[("worker-0", "loss")].values)) == ([2], [0.3])
    whole = reader.series("worker-0", "loss")
    assert whole.steps == [0, 1, 2] and len(whole) == 3
    assert reader.progress("worker-0") == (2, 10)
    assert reader.replicas() == ["worker-0"] and reader.metric_names() == ["acc", "loss"]


def test_partial_last_line_waits_for_its_end(paths):
    path = paths.metrics("master", 0)
    full = line(5, 1.0, loss=0.25)
    append(path, line(4, 0.5, loss=0.5) + full[:17])
    reader = MetricsReader(paths)
    assert reader.poll()[("master-0", "loss")].steps == [4]
    assert reader.poll() == {}
    append(path, full[17:])
    assert list(reader.poll()[("master-0", "loss")].values) == [0.25]


def test_new_replicas_and_bad_lines(paths):
    reader = MetricsReader(paths)
    assert reader.poll() == {}
    append(
        paths.metrics("worker", 1),
        line(None, 1.0, loss=1) + b"not json\n" + b'{"metrics": 3}\n' + line(1, 2.0, loss="x", ok=2.0),
    )
    with pytest.warns(RuntimeWarning, match="not a JSON object"):
        new = reader.poll()
    assert new[("worker-1", "loss")].steps == [None]  # a call without a step
    assert list(new[("worker-1", "loss")].values) == [1.0]
    assert list(new[("worker-1", "ok")].values) == [2.0]
    assert reader.progress("worker-1") == (1, None)


def test_nan_and_infinity_round_trip(paths, monkeypatch):
    monkeypatch.setenv("PX_RUN_ID", "run-1")
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from jupyter_px import tracking\ntracking.log_metrics(step=0, loss=float('nan'), gnorm=float('inf'))",
        ],
        env={
            "PYTHONPATH": str(REPO),
            "PX_RUN_ID": "run-1",
            "PX_TASK_TYPE": "worker",
            "PX_TASK_INDEX": "0",
            "PX_METRICS_PATH": str(paths.metrics("worker", 0)),
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    new = MetricsReader(paths).poll()
    assert list(new[("worker-0", "gnorm")].values) == [float("inf")]
    assert new[("worker-0", "loss")].values[0] != new[("worker-0", "loss")].values[0]


def write_user_events(logdir: Path, points: list[tuple[str, int, float]]) -> None:
    """Event files as a user's SummaryWriter writes them, with TensorBoard's own writer."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(logdir))
    for tag, step, value in points:
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])
        writer.add_event(event_pb2.Event(wall_time=time.time(), step=step, summary=summary))
    writer.close()


def test_user_event_files_are_read_incrementally(paths, tmp_path):
    replica_dir = paths.tensorboard("worker", 0)
    write_user_events(replica_dir, [("loss", 0, 1.0), ("loss", 1, 0.5)])
    write_user_events(replica_dir / "validation", [("epoch_loss", 0, 0.75)])
    # our own tracking event files are skipped: their points come from the JSONL
    (replica_dir / "events.out.tfevents.1.host.1.0.px").write_bytes(b"ignored")

    reader = MetricsReader(paths)
    new = reader.poll()
    assert new[("worker-0", "loss")].steps == [0, 1]
    assert list(new[("worker-0", "loss")].values) == [1.0, 0.5]
    assert list(new[("worker-0", "validation/epoch_loss")].values) == [0.75]
    assert reader.poll() == {}

    # One more record, appended to the same file in two writes: nothing until it is whole.
    write_user_events(tmp_path / "scratch", [("loss", 2, 0.25)])
    scratch = next((tmp_path / "scratch").iterdir()).read_bytes()
    record = scratch[_first_record_len(scratch) :]  # skip the file-version record
    event_file = next(p for p in replica_dir.iterdir() if p.is_file() and not p.name.endswith(".px"))
    append(event_file, record[:10])
    assert reader.poll() == {}
    append(event_file, record[10:])
    new = reader.poll()
    assert (new[("worker-0", "loss")].steps, list(new[("worker-0", "loss")].values)) == ([2], [0.25])


def _first_record_len(data: bytes) -> int:
    import struct

    (length,) = struct.unpack_from("<Q", data)
    return 12 + length + 4


def test_keras_style_tensor_scalars(paths):
    """TF2 `tf.summary.scalar` (what Keras' TensorBoard callback writes): tensors + plugin metadata."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.plugins.scalar import metadata
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    from tensorboard.util import tensor_util

    writer = EventFileWriter(str(paths.tensorboard("worker", 0) / "train"))
    for step, value in enumerate([0.9, 0.7]):
        value_pb = summary_pb2.Summary.Value(tag="epoch_loss", tensor=tensor_util.make_tensor_proto(value))
        if step == 0:  # TF writes the metadata with the first value of a tag only
            value_pb.metadata.CopyFrom(metadata.create_summary_metadata(display_name="", description=""))
        writer.add_event(event_pb2.Event(step=step, wall_time=1.0, summary=summary_pb2.Summary(value=[value_pb])))
    histogram = summary_pb2.Summary.Value(tag="weights", tensor=tensor_util.make_tensor_proto([1.0, 2.0]))
    writer.add_event(event_pb2.Event(step=0, summary=summary_pb2.Summary(value=[histogram])))
    writer.close()
    new = MetricsReader(paths).poll()
    assert list(new) == [("worker-0", "train/epoch_loss")]
    assert list(new[("worker-0", "train/epoch_loss")].values) == pytest.approx([0.9, 0.7])


def test_torch_summary_writer_files(paths):
    from torch.utils.tensorboard import SummaryWriter  # torch is a test dependency: missing fails

    writer = SummaryWriter(log_dir=str(paths.tensorboard("master", 0)))
    for step in range(3):
        writer.add_scalar("train/loss", 1.0 / (step + 1), step)
    writer.close()
    series = MetricsReader(paths).poll()[("master-0", "train/loss")]
    assert series.steps == [0, 1, 2]
    assert list(series.values) == pytest.approx([1.0, 0.5, 1 / 3])


def test_corrupt_event_file_is_reported_once(paths):
    replica_dir = paths.tensorboard("worker", 0)
    replica_dir.mkdir(parents=True)
    (replica_dir / "events.out.tfevents.1.host").write_bytes(b"\xff" * 64)
    reader = MetricsReader(paths)
    with pytest.warns(RuntimeWarning, match="corrupt") as first:
        assert reader.poll() == {}
    assert len([w for w in first if "corrupt" in str(w.message)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second warning about the same file fails the test
        assert reader.poll() == {}
    (replica_dir / "events.out.tfevents.1.host").write_bytes(b"\xff" * 128)  # it grows: still not re-read
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert reader.poll() == {}


def test_params(paths, monkeypatch):
    paths.params_dir.mkdir(parents=True)
    paths.params("worker", 0).write_text(json.dumps({"lr": 0.1}))
    reader = MetricsReader(paths)
    assert reader.params() == {"worker-0": {"lr": 0.1}}


def test_parse_log_metrics():
    lines: list[str | bytes] = [
        "epoch 1",
        '@px-metrics {"step":1,"time":5.0,"metrics":{"loss":0.5}}',
        '2026-11-01T10:00:00Z progress...@px-metrics {"step":2,"time":6.0,"metrics":{"loss":0.25},"total_steps":9}',
        b'@px-params {"lr":0.1}',
        '@px-params {"lr":0.2,"bs":8}',
        "@px-metrics {broken",
        '@px-metrics {"step":"x","time":1,"metrics":{"loss":1}}',
    ]
    found = parse_log_metrics(lines)
    assert found.metrics == [
        {"step": 1, "time": 5.0, "metrics": {"loss": 0.5}},
        {"step": 2, "time": 6.0, "metrics": {"loss": 0.25}, "total_steps": 9},
    ]
    assert found.params == {"lr": 0.2, "bs": 8}
    assert found.skipped == 2


def test_ingest_log_lines_feeds_the_reader(paths):
    reader = MetricsReader(paths)
    ingest_log_lines(
        paths, "worker", 3, ['@px-metrics {"step":1,"time":5.0,"metrics":{"loss":0.5}}', '@px-params {"lr":0.1}']
    )
    ingest_log_lines(
        paths, "worker", 3, ['@px-metrics {"step":2,"time":6.0,"metrics":{"loss":0.4}}', '@px-params {"bs":8}']
    )
    assert list(reader.poll()[("worker-3", "loss")].values) == [0.5, 0.4]
    assert reader.params() == {"worker-3": {"lr": 0.1, "bs": 8}}


def test_a_failure_record_in_a_pod_s_log_becomes_the_replica_s(paths):
    """A pod's runner prints its failure record (its run directory is read-only); kept as the
    replica's, it is what the message says the code raised, and where."""
    from jupyter_px.backends.failures import code_failure

    record = {"exception": "ValueError: boom", "label": "cell [5]", "line": 8, "function": "<module>"}
    found = ingest_log_lines(
        paths, "worker", 1, ["Traceback ...", "@px-failure " + json.dumps(record), "@px-failure {"]
    )
    assert found.failure == record and found.skipped == 1
    failure, message = code_failure(paths.root, "worker", 1, time.time() - 5, "exited with code 1")
    assert failure is not None and message == "exited with code 1: ValueError: boom (cell [5], line 8)", message


def test_a_torchrun_group_s_start_in_a_pod_s_log_is_one_of_the_run_s_rounds(paths):
    """Rank 0 of each group torchrun's agents formed prints its start (`runner._say_round`); kept
    in the run's `rounds.jsonl`, which the follower makes its attempts from."""
    good = '@px-round {"time": 5.5, "nodes": 3, "world": 6}'
    bad = ['@px-round {"time": 6, "nodes": 0, "world": 2}', '@px-round {"time": true, "nodes": 2, "world": 2}']
    found = ingest_log_lines(paths, "worker", 0, ["hello", good, *bad, "@px-round {"])
    assert found.rounds == [{"time": 5.5, "nodes": 3, "world": 6}] and found.skipped == 3
    ingest_log_lines(paths, "master", 0, ['@px-round {"time": 9.0, "nodes": 2, "world": 4}'])
    assert [json.loads(line)["nodes"] for line in paths.rounds.read_text().splitlines()] == [3, 2]
    from jupyter_px import runner
    from jupyter_px.runstore.layout import ROUND_LOG_PREFIX

    assert runner.ROUND_LOG_PREFIX == ROUND_LOG_PREFIX  # the runner's copy (it stays off pydantic)


def test_reads_a_real_replica_end_to_end(paths):
    script = textwrap.dedent(
        """
        from jupyter_px import tracking
        for i in range(20):
            tracking.log_metrics(step=i, total_steps=20, loss=1.0 / (i + 1))
        """
    )
    env = {
        "PYTHONPATH": str(REPO),
        "PX_RUN_ID": "run-1",
        "PX_TASK_TYPE": "worker",
        "PX_TASK_INDEX": "2",
        "PX_METRICS_PATH": str(paths.metrics("worker", 2)),
        "PX_TENSORBOARD_PATH": str(paths.tensorboard("worker", 2)),
    }
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    reader = MetricsReader(paths)
    new = reader.poll()
    assert list(new) == [("worker-2", "loss")]  # the tracking event file is not read twice
    assert new[("worker-2", "loss")].steps == list(range(20))
    assert reader.progress("worker-2") == (19, 20)


def test_big_records_are_skipped_unread(paths):
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(paths.tensorboard("worker", 0)))
    image = summary_pb2.Summary.Image(height=1, width=1, encoded_image_string=b"\0" * (3 << 20))
    writer.add_event(
        event_pb2.Event(
            step=0, summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="picture", image=image)])
        )
    )
    writer.add_event(
        event_pb2.Event(
            step=1, summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="loss", simple_value=0.5)])
        )
    )
    writer.close()
    new = MetricsReader(paths).poll()
    assert list(new) == [("worker-0", "loss")] and new[("worker-0", "loss")].steps == [1]


def test_history_budget_reads_the_tail_first_then_backfills_to_the_full_history(tmp_path):
    """A live monitor on a long run: bounded work per poll, and in the end exactly what a full
    read gives, in order, with the newest total_steps."""
    paths = RunPaths("budget", tmp_path)
    paths.metrics_dir.mkdir(parents=True)
    for replica in ("master-0", "worker-0", "worker-1"):
        with open(paths.metrics_dir / f"{replica}.jsonl", "w") as handle:
            for step in range(3000):
                handle.write(
                    json.dumps(
                        {
                            "step": step,
                            "time": 1.0 + step,
                            "total_steps": 5000 + step,
                            "metrics": {"loss": 1 / (step + 1), "acc": step / 3000},
                        }
                    )
                    + "\n"
                )
    full = MetricsReader(paths)
    full.poll()

    budgeted = MetricsReader(paths, history_budget=60_000)
    first = budgeted.poll()
    first_points = len(budgeted.series("worker-1", "loss"))
    assert 0 < first_points < 3000 and budgeted.pending_history
    assert budgeted.series("worker-1", "loss").steps[-1] == 2999  # the newest points come first
    assert budgeted.progress("worker-1") == (2999, 7999)
    assert set(first) == {(r, m) for r in ("master-0", "worker-0", "worker-1") for m in ("loss", "acc")}

    with open(paths.metrics_dir / "worker-1.jsonl", "a") as handle:  # training goes on meanwhile
        handle.write(json.dumps({"step": 3000, "time": 3001.0, "total_steps": 8000, "metrics": {"loss": 0.0}}) + "\n")
    polls = 1
    while budgeted.pending_history:
        added = budgeted.poll()
        assert added, "a poll with history pending must make progress"
        polls += 1
    assert polls > 2
    full.poll()
    for replica in ("master-0", "worker-0", "worker-1"):
        for metric in ("loss", "acc"):
            assert budgeted.series(replica, metric) == full.series(replica, metric), (replica, metric)
    assert budgeted.progress("worker-1") == (3000, 8000)
    assert budgeted.series("worker-1", "loss").steps == list(range(3001))


def test_read_history_drains_everything_at_once(tmp_path):
    paths = RunPaths("drain", tmp_path)
    paths.metrics_dir.mkdir(parents=True)
    (paths.metrics_dir / "master-0.jsonl").write_text(
        "".join(json.dumps({"step": s, "time": float(s), "metrics": {"loss": float(s)}}) + "\n" for s in range(5000))
    )
    reader = MetricsReader(paths, history_budget=10_000)
    reader.poll()
    assert reader.pending_history
    reader.read_history()
    assert not reader.pending_history
    assert list(reader.series("master-0", "loss").values) == [float(s) for s in range(5000)]


def test_reading_many_points_needs_memory_for_the_points_not_for_the_file(tmp_path):
    """100,000 points (6 MB of JSONL): what a first read keeps is the columns (about 50 bytes
    a point), and what it needs on top while parsing is bounded by its chunk size, not by the
    file (reading and parsing the file whole took over 700 bytes a point: 70 MB here)."""
    import tracemalloc

    paths = RunPaths("many", tmp_path)
    paths.metrics_dir.mkdir(parents=True)
    points = 100_000
    with open(paths.metrics("worker", 0), "w") as handle:
        for i in range(points):
            handle.write(json.dumps({"step": i, "time": 1.7e9 + i / 1000, "metrics": {"loss": 1 / (i + 1)}}) + "\n")
    reader = MetricsReader(paths)
    tracemalloc.start()
    try:
        new = reader.poll()
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    series = reader.series("worker-0", "loss")
    assert len(series) == len(new[("worker-0", "loss")]) == points
    assert series.steps[-1] == points - 1 and series.values[-1] == 1 / points
    assert peak - kept < 24 << 20, f"{(peak - kept) >> 20} MiB needed while parsing"
    assert kept / points < 100, f"{kept / points:.0f} bytes a point kept (the reader's and the update's)"
