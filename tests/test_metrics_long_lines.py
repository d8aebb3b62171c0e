"""A metrics line that never ends (or is huge) costs each poll only the bytes appended since,
and is skipped once and reported, never held or re-read (it used to be re-read, and re-searched
block by block, on every poll)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from jupyter_px.runstore import jsonl_records
from jupyter_px.runstore.layout import RunPaths
from jupyter_px.runstore.metrics import MetricsReader

MIB = 1 << 20


@pytest.fixture
def paths(tmp_path, monkeypatch) -> RunPaths:
    monkeypatch.setenv("PX_HOME", str(tmp_path / "home"))
    paths = RunPaths("run-1")
    paths.metrics_dir.mkdir(parents=True)
    return paths


def line(step: int, loss: float) -> bytes:
    return (json.dumps({"step": step, "time": float(step), "metrics": {"loss": loss}}) + "\n").encode()


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def bytes_read() -> int:
    """Bytes this process has read through read(2) so far (the kernel's count)."""
    for row in Path("/proc/self/io").read_text().splitlines():
        if row.startswith("rchar:"):
            return int(row.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def poll_quietly(reader: MetricsReader) -> tuple[dict, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        update = reader.poll()
    return update, [str(w.message) for w in caught]


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux's /proc/self/io to count bytes read")
def test_an_unterminated_long_line_costs_each_poll_only_what_was_appended(paths):
    path = paths.metrics("worker", 0)
    append(path, line(0, 0.5) + b'{"step": 1, "metrics": {"loss": "' + b"x" * (6 * MIB))
    reader = MetricsReader(paths, event_files=False)
    update, said = poll_quietly(reader)
    assert update[("worker-0", "loss")].steps == [0]
    assert len(said) == 1 and "skipped 1 line(s) longer than" in said[0]
    # The reader is past the bytes it skipped, not stuck at the line's start.
    assert reader.positions()["metrics/worker-0.jsonl"].offset == path.stat().st_size

    for _ in range(3):  # the line keeps growing: each poll reads what was appended, no more
        append(path, b"x" * (2 * MIB))
        before = bytes_read()
        update, said = poll_quietly(reader)
        assert update == {} and said == []  # reported once, not on every poll
        assert bytes_read() - before < 3 * MIB

    append(path, b'"}}\n' + line(2, 0.25))
    update, said = poll_quietly(reader)
    assert update[("worker-0", "loss")].steps == [2] and said == []
    assert reader.long_lines() == {"metrics/worker-0.jsonl": 1}
    assert reader.series("worker-0", "loss").steps == [0, 2]


def test_a_long_line_ending_within_one_read_is_skipped_and_the_rest_read(paths):
    path = paths.metrics("worker", 0)
    append(path, line(0, 0.5) + b"[" + b"1," * MIB + b"1]\n" + line(1, 0.4) + b"y" * (2 * MIB))
    reader = MetricsReader(paths, event_files=False)
    update, said = poll_quietly(reader)
    assert update[("worker-0", "loss")].steps == [0, 1]
    assert reader.long_lines() == {"metrics/worker-0.jsonl": 2} and len(said) == 1
    # A client reading the file again from the start gets the same points.
    again, end = reader.read_range("metrics/worker-0.jsonl", 0)
    assert again[("worker-0", "loss")].steps == [0, 1] and end == path.stat().st_size


def test_read_lines_never_holds_more_than_a_line_limit(tmp_path):
    """The framing alone: lines handed over are complete and short; a long one is only counted."""
    path = tmp_path / "m.jsonl"
    limit = jsonl_records.MAX_LINE_BYTES
    path.write_bytes(b"a\n" + b"z" * (3 * limit) + b"\nb\nc")
    got: list[bytes] = []
    read = jsonl_records.read_lines(str(path), 0, path.stat().st_size, got.append)
    assert b"".join(got) == b"a\nb\n" and max(len(chunk) for chunk in got) <= limit
    assert read.long_lines == 1 and not read.skipping and read.offset == path.stat().st_size - 1


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux's /proc/self/io to count bytes read")
def test_clients_paging_past_a_long_line_read_a_bounded_amount_per_request(paths):
    """The REST route pages a file with `read_range(limit=...)`: a page that ends inside a
    100 MB line must not scan to that line's end."""
    path = paths.metrics("worker", 0)
    append(path, line(0, 0.5) + b"[" + b"0" * (24 * MIB) + b"]\n" + line(1, 0.4))
    reader = MetricsReader(paths, event_files=False)
    poll_quietly(reader)
    name, offset, steps, requests = "metrics/worker-0.jsonl", 0, [], 0
    while offset < path.stat().st_size:
        before = bytes_read()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            points, offset = reader.read_range(name, offset, limit=1000)
        assert bytes_read() - before < 4 * MIB
        steps += [step for series in points.values() for step in series.steps]
        requests += 1
        assert requests < 100
    assert steps == [0, 1]
