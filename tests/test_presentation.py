"""The presentation layer: the words, tables and log streams every surface shares."""

from __future__ import annotations

import io
import tracemalloc

import pytest

from jupyter_px.presentation import text
from jupyter_px.presentation.follow import LogPrinter
from jupyter_px.runstore import ReplicaState, ReplicaStatus, RunState, RunStatus

PYTORCH_2 = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 2}}}


def test_printable_escapes_control_characters_and_clips():
    assert text.printable("plain name") == "plain name"
    assert text.printable("\x1b[31mred\x07\nrow\t\u202eltr") == "\\x1b[31mred\\x07\\nrow\\t\\u202eltr"
    assert text.printable("x" * 300, 10) == "x" * 9 + "…"
    assert text.printable(None) == ""


def test_table_keeps_rows_on_one_line_and_bounded():
    table = text.table(("A", "B"), [("\x1b]0;t\x07" + "n" * 200, "a\nb"), ("ok", "fine")])
    lines = table.splitlines()
    assert len(lines) == 3 and "\x1b" not in table
    assert len(lines[1]) <= text.CELL_WIDTH + 2 + len("a\\nb")
    assert lines[2].split() == ["ok", "fine"]


def test_durations():
    assert [text.duration(s) for s in (None, -1, 5.25, 65, 7322)] == ["-", "-", "5.2s", "1m05s", "2h02m"]
    assert text.elapsed(100.0, 112.5) == "12.5s" and text.elapsed(None, 5.0) == "-"


def _status(*replicas: ReplicaStatus, message: str | None = None) -> RunStatus:
    return RunStatus(run_id="r-1", state=RunState.FAILED, message=message, replicas=list(replicas))


def test_failure_text_names_failed_and_lost_replicas_and_where_their_logs_are():
    status = _status(
        ReplicaStatus(role="master", index=0, state=ReplicaState.STOPPED, reason="StoppedByRun"),
        ReplicaStatus(role="worker", index=0, state=ReplicaState.FAILED, reason="Error", exit_code=3, message="boom"),
        ReplicaStatus(role="worker", index=1, state=ReplicaState.LOST, reason="SupervisorLost"),
        message="worker-0 failed",
    )
    assert text.failed_replicas(status) == status.replicas[1:]
    one = text.failure_text(status, "logs {run_id} {role}.{index}", one_line=True)
    assert one == (
        "run r-1 Failed: worker-0 failed [worker-0 Failed (Error, exit code 3): boom; "
        "worker-1 Lost (SupervisorLost)]; see logs r-1 worker.0"
    )
    lines = text.failure_text(status, "logs {run_id} {role}.{index}").splitlines()
    assert lines == [
        "run r-1 Failed: worker-0 failed",
        "  worker-0 Failed (Error, exit code 3): boom",
        "  its log: logs r-1 worker.0",
        "  worker-1 Lost (SupervisorLost)",
        "  its log: logs r-1 worker.1",
    ]


def test_run_failed_uses_the_same_words():
    from jupyter_px.api import RunFailed

    status = _status(ReplicaStatus(role="worker", index=0, state=ReplicaState.FAILED, reason="OOMKilled"))
    assert (
        str(RunFailed(status))
        == text.failure_text(status, one_line=True)
        == "run r-1 Failed [worker-0 Failed (OOMKilled)]"
    )


def test_topology_problems_name_the_option_that_set_a_field():
    from jupyter_px.topology import TopologyError, apply_overrides, parse_topology

    with pytest.raises(TopologyError) as raised:
        apply_overrides(parse_topology(PYTORCH_2), workers=-1)
    options = {"environment.replicas.n_workers": "--workers -1"}
    assert text.topology_problems(raised.value, options=options) == "invalid topology: --workers -1: -1 is not >= 0"
    with pytest.raises(TopologyError) as raised:
        parse_topology({"framework": "caffe", "environment": {"replicas": {"n_workers": -2}}})
    report = text.topology_problems(raised.value, where="t.yaml")
    assert report.startswith("invalid topology in t.yaml (2 problems):\n  framework: 'caffe' is not one of")


def _huge_log(px_home, synthetic_run, size_mb: int, newline_every: int | None):
    root = synthetic_run("big-1", PYTORCH_2, state="Succeeded", log_lines=0)
    piece = (
        "q" * (1 << 20) if newline_every is None else ("q" * (newline_every - 1) + "\n") * ((1 << 20) // newline_every)
    )
    path = root / "logs" / "worker-0.log"
    with open(path, "w") as handle:
        for _ in range(size_mb):
            handle.write(piece)
    return path.stat().st_size


class _Sink(io.TextIOBase):
    """Counts what is written, keeps nothing."""

    def __init__(self):
        self.chars = self.lines = 0

    def write(self, s):
        self.chars += len(s)
        self.lines += s.count("\n")
        return len(s)


@pytest.mark.parametrize("newline_every", [None, 1000], ids=["one-huge-line", "lines"])
@pytest.mark.parametrize("prefixed", [True, False])
def test_log_printer_memory_does_not_grow_with_the_log(px_home, synthetic_run, newline_every, prefixed):
    from jupyter_px.runstore import RunStore

    size = _huge_log(px_home, synthetic_run, 64, newline_every)
    sink = _Sink()
    printer = LogPrinter(RunStore(), "big-1", [("worker", 0)], sink, prefixed=prefixed)
    tracemalloc.start()
    try:
        printer.pump(final=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak  # a 64 MiB log through about a few chunks' worth
    newlines = 0 if newline_every is None else size // newline_every
    if prefixed:  # every line out is "[worker.0] " + its text + "\n"; a huge line goes out in 1 MiB pieces
        assert sink.lines == (64 if newline_every is None else newlines)
        assert sink.chars == size - newlines + sink.lines * len("[worker.0] \n")
    else:  # verbatim, with the unterminated last line ended
        assert sink.chars == size + (1 if newline_every is None else 0)


def test_run_logs_returns_a_bounded_tail_by_default(px_home, synthetic_run):
    from jupyter_px.api import LOGS_TAIL_BYTES, Run

    size = _huge_log(px_home, synthetic_run, 40, 100)
    run = Run("big-1")
    tracemalloc.start()
    try:
        tail = run.logs("worker", 0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(tail) == LOGS_TAIL_BYTES and peak < 8 * LOGS_TAIL_BYTES
    assert len(run.logs("worker", 0, tail=None)) == size  # the whole log when asked for
    with pytest.raises(ValueError, match="tail must be a positive number"):
        run.logs("worker", 0, tail=0)


def test_run_summary_is_the_runs_json_shape(px_home, synthetic_run):
    from jupyter_px.runstore import RunStore
    from jupyter_px.service.views import run_detail, run_summary

    synthetic_run("shape-1", PYTORCH_2, state="Succeeded")
    store = RunStore()
    record, status = store.record("shape-1"), store.status("shape-1")
    summary = run_summary(record, status)
    assert summary["replica_counts"] == {"Succeeded": 3} and summary["finished"] is True
    detail = run_detail(record, status)
    assert {k: detail[k] for k in summary} == summary
    assert [r["key"] for r in detail["replicas"]] == ["master-0", "worker-0", "worker-1"]
    rows = text.runs_rows([summary])
    assert rows[0][:5] == ("shape-1", "-", "Succeeded", "local", "3 Succeeded")
