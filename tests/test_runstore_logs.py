"""Reading replica logs from the run store: bounded memory whatever the log's size, and text
that never splits a UTF-8 character, however the reads fall."""

from __future__ import annotations

import tracemalloc

import pytest

from jupyter_px.runstore import RunRecord, RunStore
from jupyter_px.runstore.store import LOG_CHUNK_BYTES

TEXT = "bar █ naïve 😀 end\nzweite Zeile: größer ✓\n"


@pytest.fixture
def store(tmp_path):
    store = RunStore(tmp_path)
    store.create(RunRecord(run_id="job", topology={}), {"main.py": ""})
    return store


def write_log(store: RunStore, data: bytes) -> None:
    store.paths("job").log("worker", 0).write_bytes(data)


def append_log(store: RunStore, data: bytes) -> None:
    with open(store.paths("job").log("worker", 0), "ab") as handle:
        handle.write(data)


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 5, 7])
def test_iter_log_with_tiny_chunks_never_splits_a_character(store, chunk_size):
    data = TEXT.encode()
    write_log(store, data)
    chunks = list(store.iter_log("job", "worker", 0, chunk_size=chunk_size))
    assert "".join(text for text, _ in chunks) == TEXT
    assert "\ufffd" not in "".join(text for text, _ in chunks)
    assert chunks[-1][1] == len(data)
    offsets = [offset for _, offset in chunks]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)


def test_a_character_split_exactly_at_the_chunk_boundary(store):
    data = "bar █".encode()  # '█' is 3 bytes: b'\xe2\x96\x88' at offsets 4..6
    write_log(store, data)
    text, offset = store.read_log("job", "worker", 0, 0, limit=5)  # the read ends inside '█'
    assert (text, offset) == ("bar ", 4)
    assert store.read_log("job", "worker", 0, offset, limit=5) == ("█", 7)


def test_successive_reads_of_a_growing_log_resume_at_the_split_character(store):
    encoded = "bar █\n".encode()
    write_log(store, encoded[:5])  # the writer has written half of '█' so far
    text, offset = store.read_log("job", "worker", 0)
    assert (text, offset) == ("bar ", 4)
    assert store.read_log("job", "worker", 0, offset) == ("", 4)  # still incomplete: nothing, no U+FFFD
    append_log(store, encoded[5:])
    assert store.read_log("job", "worker", 0, offset) == ("█\n", 8)


def test_a_tail_that_starts_inside_a_character_starts_after_it(store):
    write_log(store, "ab█c".encode())  # a, b, 3 bytes of '█', c
    assert store.read_log("job", "worker", 0, -3) == ("c", 6)  # the last 3 bytes: 2 of '█', then 'c'
    assert "".join(t for t, _ in store.iter_log("job", "worker", 0, -4, chunk_size=1)) == "█c"


def test_bytes_that_are_not_utf8_are_replaced_not_retried_forever(store):
    write_log(store, b"ok \xff\xfe done")
    assert "".join(t for t, _ in store.iter_log("job", "worker", 0, chunk_size=2)) == "ok \ufffd\ufffd done"


def test_log_reads_are_bounded_by_default(store):
    write_log(store, b"x" * (3 * LOG_CHUNK_BYTES + 10))
    text, offset = store.read_log("job", "worker", 0)
    assert len(text) == offset == LOG_CHUNK_BYTES
    assert sum(len(t) for t, _ in store.iter_log("job", "worker", 0, offset)) == 2 * LOG_CHUNK_BYTES + 10


def test_memory_does_not_grow_with_the_log(store):
    """A 50 MB log, read whole through the public calls: the peak stays at a few chunks."""
    line = ("step 123 loss 0.25 ✓ " * 4 + "\n").encode()
    block = line * (LOG_CHUNK_BYTES // len(line))
    with open(store.paths("job").log("worker", 0), "wb") as handle:
        for _ in range(50):
            handle.write(block)
    size = store.paths("job").log("worker", 0).stat().st_size
    tracemalloc.start()
    try:
        total, offset = 0, 0
        while True:  # what a caller that loops on read_log does
            text, next_offset = store.read_log("job", "worker", 0, offset)
            if next_offset == offset:
                break
            total, offset = total + len(text.encode()), next_offset
        _, read_log_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        streamed = sum(len(text.encode()) for text, _ in store.iter_log("job", "worker", 0))
        _, iter_log_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == streamed == size > 50_000_000
    assert read_log_peak < 8 * LOG_CHUNK_BYTES, read_log_peak
    assert iter_log_peak < 8 * LOG_CHUNK_BYTES, iter_log_peak
