"""`Run.logs()` and `Backend.logs()` return whole logs past the store's 1 MiB read bound, and a
tail that starts in the middle of a UTF-8 character starts at the next whole one."""

from __future__ import annotations

from jupyter_px.api import Run
from jupyter_px.backends.local import LocalBackend
from jupyter_px.runstore import RunRecord, RunStore

#: 3 MB of two-byte characters: more than one bounded read, and every odd offset splits one.
TEXT = "é" * 1_500_000 + "\nend\n"


def _run_with_log(px_home) -> Run:
    store = RunStore(px_home)
    paths = store.create(RunRecord(run_id="logs-1", topology={"framework": "pytorch"}), {"main.py": "pass\n"})
    paths.log("master", 0).write_text(TEXT)
    return Run("logs-1", store)


def test_whole_log_is_returned_past_one_read(px_home):
    assert _run_with_log(px_home).logs(tail=None) == TEXT


def test_tail_larger_than_one_read_starts_at_a_character(px_home):
    tail = _run_with_log(px_home).logs(tail=2_000_001)  # an odd byte count: the cut splits an é
    assert TEXT.endswith(tail)
    assert 2_000_001 - 1 <= len(tail.encode()) <= 2_000_001


def test_backend_logs_stream_the_whole_log(px_home):
    run = _run_with_log(px_home)
    chunks = list(LocalBackend(RunStore(px_home)).logs(run.run_id, "master", 0))
    assert len(chunks) > 1 and "".join(chunks) == TEXT
