"""jupyter_px.runstore.metrics_cursor: a client's position in a run's metrics files, paged.

The server's cache is driven directly here, over real files, to reach what the REST test does
not: a small page budget (many polls for one history), a replaced file, a cursor made by another
reader (a restarted server), and TensorBoard event files read from the middle.
"""

from __future__ import annotations

import base64
import json
import os
import zlib
from pathlib import Path

import pytest

from jupyter_px.runstore import RunStore
from jupyter_px.runstore.metrics_cursor import MetricsCursorError, decode_cursor, encode_cursor
from jupyter_px.service.metrics_cache import MetricsCache


@pytest.fixture
def store(tmp_path) -> RunStore:
    store = RunStore(tmp_path / "home")
    paths = store.paths("run-1")
    paths.metrics_dir.mkdir(parents=True)
    paths.tensorboard_dir.mkdir(parents=True)
    return store


def lines(path: Path, steps: range, when: float = 1000.0) -> None:
    with open(path, "a") as handle:
        for step in steps:
            handle.write(json.dumps({"step": step, "time": when - step, "metrics": {"loss": step / 7}}) + "\n")


def drain(cache: MetricsCache, cursor: str | None, budget: int) -> tuple[list[tuple[str, str, int]], str, int]:
    """Poll with each answer's cursor until nothing is pending: (points, last cursor, polls)."""
    got: list[tuple[str, str, int]] = []
    polls = 0
    while True:
        answer = cache.points_since("run-1", cursor, budget=budget)
        polls += 1
        for replica, metrics in answer["series"].items():
            for name, points in metrics.items():
                got.extend((replica, name, step) for step in points["steps"])
        cursor = answer["cursor"]
        if not answer["history_pending"]:
            return got, cursor, polls


def test_pages_of_a_long_history_return_every_point_once(store):
    paths = store.paths("run-1")
    lines(paths.metrics("master", 0), range(3000))
    lines(paths.metrics("worker", 0), range(1000))
    cache = MetricsCache(store)
    budget = 16 * 1024
    first = cache.points_since("run-1", None, budget=budget)
    assert first["history_pending"]
    page = sum(len(m["loss"]["steps"]) for m in first["series"].values())
    shortest = min(
        len(line) for name in ("master", "worker") for line in paths.metrics(name, 0).read_bytes().splitlines()
    )
    assert page <= budget / shortest + 2  # bounded: a budget's worth of lines (and a line per file), not the run

    got, cursor, polls = drain(cache, None, budget)
    assert sorted(got) == sorted(
        [("master-0", "loss", s) for s in range(3000)] + [("worker-0", "loss", s) for s in range(1000)]
    )
    assert polls > 1
    lines(paths.metrics("worker", 0), range(1000, 1010))  # later flushes: only those
    more, _, _ = drain(cache, cursor, budget)
    assert more == [("worker-0", "loss", s) for s in range(1000, 1010)]


def test_a_cursor_outlives_the_reader_that_made_it(store):
    """A restarted server (or an evicted reader) continues a client's cursor without repeats."""
    paths = store.paths("run-1")
    lines(paths.metrics("master", 0), range(5))
    _, cursor, _ = drain(MetricsCache(store), None, 1 << 20)
    lines(paths.metrics("master", 0), range(5, 8))
    got, _, _ = drain(MetricsCache(store), cursor, 1 << 20)
    assert got == [("master-0", "loss", s) for s in (5, 6, 7)]


def test_a_replaced_file_is_read_from_its_start(store):
    paths = store.paths("run-1")
    path = paths.metrics("master", 0)
    lines(path, range(5))
    cache = MetricsCache(store)
    _, cursor, _ = drain(cache, None, 1 << 20)
    replacement = path.with_suffix(".new")
    lines(replacement, range(100, 108))  # longer than the old one: an offset alone would skip lines
    os.replace(replacement, path)
    with pytest.warns(RuntimeWarning, match="replaced"):
        got, _, _ = drain(cache, cursor, 1 << 20)
    assert got == [("master-0", "loss", s) for s in range(100, 108)]


def test_tensor_scalars_read_from_the_middle_of_an_event_file(store):
    """TF2 names a tag's plugin in its first event only: a page that starts later still knows it."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.plugins.scalar import metadata
    from tensorboard.summary.writer.record_writer import RecordWriter
    from tensorboard.util import tensor_util

    logdir = store.paths("run-1").tensorboard("worker", 0) / "train"
    logdir.mkdir(parents=True)
    with open(logdir / "events.out.tfevents.1.host.1.v2", "wb") as handle:
        writer = RecordWriter(handle)
        for step in range(400):
            value = summary_pb2.Summary.Value(tag="epoch_loss", tensor=tensor_util.make_tensor_proto(float(step)))
            if step == 0:
                value.metadata.CopyFrom(metadata.create_summary_metadata(display_name="", description=""))
            event = event_pb2.Event(step=step, wall_time=1.0, summary=summary_pb2.Summary(value=[value]))
            writer.write(event.SerializeToString())
    got, _, polls = drain(MetricsCache(store), None, 2048)
    assert got == [("worker-0", "train/epoch_loss", s) for s in range(400)]
    assert polls > 1


def test_cursor_round_trip_and_refusals():
    from jupyter_px.runstore.metrics import FilePosition

    positions = {"metrics/master-0.jsonl": FilePosition(120, 77), "metrics/worker-0.rank1.jsonl": FilePosition(0, 9)}
    assert decode_cursor(encode_cursor(positions)) == positions
    bomb = "p1." + base64.urlsafe_b64encode(zlib.compress(b" " * (40 << 20), 9)).decode()  # 40 MB inflated
    assert len(bomb) < 64 * 1024
    for bad in ("", "1700000000.5", "p1.not base64", "p1." + "A" * 70_000, bomb):
        with pytest.raises(MetricsCursorError, match="is not a metrics cursor"):
            decode_cursor(bad)
