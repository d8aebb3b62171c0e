"""What the run monitor shows, as data and HTML: replica rows, log tails, and the final view.

The live monitor (`widgets.run_monitor`) renders its replica table and log tabs from here, and
when the run ends it replaces its output with `final_bundle` (HTML and text, no widget): that
static view is what a saved notebook, an export or GitHub shows, and it is built from the same
rows the widget showed a moment before, so the swap does not change what the user reads.

Wording, and why:

* A replica's **label** is what the job calls it: TensorFlow's master is `chief` (the name in
  its TF_CONFIG) unless the topology asks for `master`.
* The **state** says what happened: a parameter server or worker stopped by the run after the
  chief finished (reason `StoppedByRun`, state Succeeded, exit 143) reads "stopped when the run
  succeeded", not "Succeeded" with a SIGTERM exit code. A running replica with no output and no
  metric yet reads "starting", so a 30-second TensorFlow import does not look like a hang.
* The **reason** column puts the reason and its details apart ("error: exited with code 3"),
  never run together.
* **Logs**: the local backend writes a replica's stdout and stderr into one file, so a log
  cannot say which stream a line came from; tracebacks and error lines (`ERROR ...`,
  `SomethingError: ...`) are marked instead, which is what a reader of a failed log looks for.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..runstore import ReplicaState, ReplicaStatus, RunState, RunStatus
from ..runstore.models import Reason
from .colors import STATE_COLORS, state_color
from .html import escape, state_badge
from .labels import ReplicaNames, replica_label
from .text import elapsed, printable
from .view_models import ReplicaRowView

#: Bytes of a replica's log in the final (static) view, and how many replicas' logs it keeps.
FINAL_LOG_BYTES = 4096
FINAL_LOG_REPLICAS = 16
#: Characters of a replica's last output line shown in the table.
LAST_LINE_CHARS = 100

#: Reasons as words (the status keeps Kubernetes-style reasons); any other reason shows as it is.
REASON_WORDS: dict[str, str] = {
    Reason.ERROR.value: "error",
    Reason.SIGNALED.value: "killed by a signal",
    Reason.OOM_KILLED.value: "out of memory",
    Reason.STOPPED_BY_RUN.value: "stopped by the run",
    Reason.STOPPED_BY_USER.value: "stopped on request",
    Reason.SUPERVISOR_LOST.value: "lost with its supervisor",
    Reason.POD_DELETED.value: "its pod was deleted",
    Reason.COLLECTIVE_TIMEOUT.value: "its peers timed out waiting for it",
    Reason.LEFT_RUN.value: "left the run",
    Reason.COMPLETED.value: "",
}
#: Reasons whose message says all there is to say ("stopped because master-0 failed").
SELF_EXPLAINED = (Reason.STOPPED_BY_RUN, Reason.STOPPED_BY_USER, Reason.COLLECTIVE_TIMEOUT, Reason.LEFT_RUN)
STOPPED_WHEN_SUCCEEDED = "stopped when the run succeeded"
STARTING = "starting"
#: A Running replica that logs steps and has logged none for a while (`stalled_since`): a badge, not a state.
STALLED = "stalled"

_ERROR_LINE = re.compile(
    r"^(Traceback \(most recent call last\):|\s*File \".*\", line \d+|[\w.]*(Error|Exception|Exit|Interrupt)\b.*:"
    r"|ERROR\b|FATAL\b|CRITICAL\b|E\d{4} |F\d{4} |terminate called|Aborted|Killed|Segmentation fault)"
)


def stopped_when_succeeded(replica: ReplicaStatus | None) -> bool:
    """A replica the run stopped because it had succeeded (a parameter server, a last worker)."""
    return replica is not None and replica.state == ReplicaState.SUCCEEDED and replica.reason == Reason.STOPPED_BY_RUN


def reason_text(replica: ReplicaStatus | None) -> str:
    """`error: exited with code 3`, `stopped because master-0 failed`; empty when nothing is wrong."""
    if replica is None or replica.state == ReplicaState.SUCCEEDED:
        return ""
    if replica.reason in SELF_EXPLAINED and replica.message:
        return printable(replica.message, 160)  # the message says it all: "stopped because ... failed"
    words = REASON_WORDS.get(replica.reason or "", replica.reason or "")
    parts = [p for p in (words, printable(replica.message, 160) if replica.message else "") if p]
    return ": ".join(parts)


@dataclass(frozen=True)
class ReplicaRow:
    """One row of the replica table."""

    key: str  # role-index, as in the store
    label: str  # what the job calls it
    state: str  # the replica's state (data-state)
    phase: str  # what the user reads: the state, "starting", "stopped when the run succeeded"
    restarts: int
    exit_code: str
    resources: str
    step: str
    reason: str
    last_line: str
    stalled_since: float | None = None  # while marked stalled: its last step's time (the badge's "since")
    stall_after_s: float | None = None  # while marked stalled: the quiet time it passed
    memory_limit_mib: float | None = None  # the limit its backend enforces (declared, or a partition's default)


def phase_of(replica: ReplicaStatus | None, has_output: bool, has_metrics: bool) -> str:
    if replica is None:
        return "Pending"
    if stopped_when_succeeded(replica):
        return STOPPED_WHEN_SUCCEEDED
    if replica.state == ReplicaState.RUNNING and replica.stalled_since is not None:
        return STALLED
    if replica.state == ReplicaState.RUNNING and not has_output and not has_metrics:
        return STARTING
    return replica.state.value


def _with_limit(resources: str, replica: ReplicaStatus | None) -> str:
    """The topology's resources, and the memory limit the backend found where the topology
    declares none (a Slurm partition's default): `cpu 0.5–1, mem 256 MiB (default)`."""
    limit = replica.memory_limit_mib if replica is not None else None
    if not limit or "mem" in resources:
        return resources
    return ("" if resources == "-" else f"{resources}, ") + f"mem {limit:g} MiB (default)"


def _stalled(replica: ReplicaStatus | None, field: str) -> float | None:
    """The replica's stall field while it is a Running replica marked stalled, else None."""
    if replica is None or replica.state != ReplicaState.RUNNING or replica.stalled_since is None:
        return None
    value = getattr(replica, field)
    return None if value is None else float(value)


def replica_rows(
    keys: Sequence[tuple[str, int]],
    status: RunStatus,
    *,
    resources: Mapping[str, str],
    progress: Mapping[str, str],
    last_lines: Mapping[str, str],
    tf_chief: bool = False,
) -> list[ReplicaRow]:
    """The table's rows, in topology order (replicas the status does not know yet are Pending)."""
    by_key = {replica.key: replica for replica in status.replicas}
    order = list(keys) or [(r.role, r.index) for r in status.replicas]
    rows = []
    for role, index in order:
        key = f"{role}-{index}"
        replica = by_key.get(key)
        last = last_lines.get(key, "")
        exit_code = "-" if replica is None or replica.exit_code is None else str(replica.exit_code)
        if stopped_when_succeeded(replica):
            exit_code = "-"  # 143 is the SIGTERM the run sent, not a failure
        rows.append(
            ReplicaRow(
                key=key,
                label=replica_label(role, index, tf_chief),
                state=replica.state.value if replica else "Pending",
                phase=phase_of(replica, bool(last), key in progress),
                restarts=replica.restarts if replica else 0,
                exit_code=exit_code,
                resources=_with_limit(resources.get(key, "-"), replica),
                step=progress.get(key, ""),
                reason=reason_text(replica),
                last_line=last,
                stalled_since=_stalled(replica, "stalled_since"),
                stall_after_s=_stalled(replica, "stall_after_s"),
                memory_limit_mib=replica.memory_limit_mib if replica is not None else None,
            )
        )
    return rows


def phase_counts(rows: Iterable[ReplicaRow]) -> str:
    """`2 running, 2 starting of 4`."""
    counts: dict[str, int] = {}
    rows = list(rows)
    for row in rows:
        phase = "succeeded" if row.phase == STOPPED_WHEN_SUCCEEDED else row.phase.lower()
        counts[phase] = counts.get(phase, 0) + 1
    return ", ".join(f"{n} {phase}" for phase, n in counts.items()) + f" of {len(rows)}"


def _phase_html(row: ReplicaRow | ReplicaRowView) -> str:
    if row.phase == STOPPED_WHEN_SUCCEEDED:
        return f"<span style='color:{STATE_COLORS['Succeeded']}'>{STOPPED_WHEN_SUCCEEDED}</span>"
    if row.phase == STARTING:  # waiting for its first output: the waiting color, not a link's blue
        return f"<span style='color:{STATE_COLORS['Pending']};font-weight:600'>starting</span>"
    if row.phase == STALLED:  # still Running: the warning's color, and what to run next
        hint = "no step logged for a while: `jupyter px stacks RUN` shows where each rank is"
        color = STATE_COLORS["Restarting"]
        return f"<span class='px-stalled' title='{hint}' style='color:{color};font-weight:600'>stalled</span>"
    return state_badge(row.phase)


TABLE_HEADERS = ("replica", "state", "restarts", "exit code", "resources", "step", "reason", "last output")
_CELL = "padding:2px 14px 2px 0;text-align:left;vertical-align:top"


def rows_html(rows: Sequence[ReplicaRow | ReplicaRowView], max_height: int | None = 360) -> str:
    """The replica table as HTML: one row per replica with `data-replica` / `data-state`."""
    body = []
    for row in rows:
        cells = (
            escape(row.label),
            _phase_html(row),
            str(row.restarts),
            escape(row.exit_code),
            escape(row.resources),
            escape(row.step),
            escape(row.reason),
            f"<code style='opacity:0.8'>{escape(row.last_line, LAST_LINE_CHARS)}</code>" if row.last_line else "",
        )
        body.append(
            f"<tr data-replica='{escape(row.key)}' data-state='{escape(row.state)}'>"
            + "".join(f"<td style='{_CELL}'>{cell}</td>" for cell in cells)
            + "</tr>"
        )
    head = "".join(f"<th style='{_CELL}'>{h}</th>" for h in TABLE_HEADERS)
    style = f"max-height:{max_height}px;overflow:auto" if max_height else ""
    return (
        f"<div style='{style}'><table class='px-replicas'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def rows_text(rows: Sequence[ReplicaRow | ReplicaRowView]) -> str:
    from .text import table

    return table(
        ("REPLICA", "STATE", "RESTARTS", "EXIT", "RESOURCES", "STEP", "REASON"),
        [(r.label, r.phase, r.restarts, r.exit_code, r.resources, r.step or "-", r.reason) for r in rows],
    )


# ---- logs ------------------------------------------------------------------------------------


def last_line(text: str) -> str:
    """The last non-empty line of a log tail (progress bars' carriage returns taken into account)."""
    for line in reversed(text.splitlines()):
        line = line.rsplit("\r", 1)[-1].strip()
        if line and not line.startswith("--- restart"):
            return line
    return ""


#: An exception line: `ValueError: ...`, `torch.distributed.DistBackendError: ...`, `KeyboardInterrupt`.
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b(:.*)?$")


def exception_line(text: str) -> str:
    """The line that says why a replica failed: the last line of its log that reads as an
    exception (where a Python user looks, at the bottom of the traceback), else its last line."""
    lines = [line.rsplit("\r", 1)[-1].strip() for line in text.split("\n")]
    lines = [line for line in lines if line and not line.startswith("--- restart")]
    for line in reversed(lines):
        if _EXCEPTION.match(line):
            return line
    return lines[-1] if lines else ""


def log_html(text: str, max_height: int = 320) -> str:
    """A log tail as HTML, scrolled to its end; traceback and error lines marked (see the module
    docstring: a log does not say which stream a line came from)."""
    if not text:
        body = "<i>(no output yet)</i>"
    else:
        lines, in_traceback = [], False
        for line in text.split("\n"):
            if line.startswith("Traceback (most recent call last):"):
                in_traceback = True
            error = in_traceback or bool(_ERROR_LINE.match(line))
            if in_traceback and line and not line.startswith((" ", "\t", "Traceback")):
                in_traceback = False  # the exception line ends a traceback
            quoted = html.escape(line)
            lines.append(
                f"<span class='px-log-error' style='color:var(--jp-error-color1,#d62728)'>{quoted}</span>"
                if error and line
                else quoted
            )
        body = "\n".join(lines)
    # column-reverse keeps the view scrolled to the newest line as the text grows
    return (
        f"<div style='max-height:{max_height}px;overflow:auto;display:flex;flex-direction:column-reverse'>"
        f"<pre style='white-space:pre-wrap;font-size:12px;margin:0'>{body}</pre></div>"
    )


# ---- the final view --------------------------------------------------------------------------


def header_html(run_id: str, name: str | None, backend: str, status: RunStatus | None, created_at: float) -> str:
    state = status.state.value if status else "Pending"
    started = (status.started_at if status else None) or created_at
    end = status.finished_at if status and status.state.finished else None
    named = f" ({escape(name, 48)})" if name else ""
    message = f" <small>{escape(status.message, 160)}</small>" if status and status.message else ""
    return (
        f"<b>{html.escape(run_id)}</b>{named} &middot; backend {escape(backend)} &middot; "
        f"<span class='px-run-state' data-state='{state}'>{state_badge(state)}</span> &middot; "
        f"elapsed {elapsed(started, end)}{message}"
    )


def final_metrics(data: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str, str, str]]:
    """(metric, replica, last value, at step) for each metric and replica."""
    rows = []
    names = sorted({name for metrics in data.values() for name in metrics})
    for name in names:
        for replica in sorted(data):
            series = data[replica].get(name)
            if series is None or not len(series):
                continue
            step = series.steps[-1] if series.steps else None
            rows.append((name, replica, f"{series.values[-1]:.6g}", "-" if step is None else str(step)))
    return rows


@dataclass(frozen=True)
class FinalView:
    """What the monitor's output says once the run has ended (built by the monitor)."""

    run_id: str
    name: str | None
    backend: str
    created_at: float
    status: RunStatus
    rows: list[ReplicaRow] | list[ReplicaRowView]
    metrics: Mapping[str, Mapping[str, Any]]
    logs: Mapping[str, str]  # replica key -> last bytes of its log
    #: The TensorBoard the monitor embedded (`html.tensorboard_html`), kept in the final view so
    #: the run's TensorBoard stays where the user opened it (while its server lives).
    tensorboard: str = ""
    #: The straggler line of the run's view-model (`rates.straggler_line`), if any.
    straggler: str = ""
    #: How the run's job names its replicas (a TensorFlow master is `chief`).
    names: ReplicaNames = field(default_factory=ReplicaNames)


def _bar_html(state: RunState) -> str:
    color = state_color(state.value)
    return (
        f"<div class='px-final-bar' style='height:8px;border-radius:4px;margin:6px 0;width:100%;"
        f"background:{color}' title='{state.value}'></div>"
    )


def final_html(view: FinalView) -> str:
    status = view.status
    parts = [
        f"<div class='px-run-final' data-run-id='{escape(view.run_id)}' data-state='{status.state.value}'>",
        header_html(view.run_id, view.name, view.backend, status, view.created_at),
        _bar_html(status.state),
        rows_html(view.rows, max_height=None),
    ]
    if view.straggler:
        parts.append(f"<div class='px-straggler'>{escape(view.straggler)}</div>")
    metrics = final_metrics(view.metrics)
    if metrics:
        head = "".join(f"<th style='{_CELL}'>{h}</th>" for h in ("metric", "replica", "last value", "at step"))
        body = "".join(
            "<tr>" + "".join(f"<td style='{_CELL}'>{escape(cell)}</td>" for cell in row) + "</tr>"
            for row in metrics[:64]
        )
        # The values, not a drawing: the plots are plotly's (the live views), and a saved
        # notebook's HTML must read where no script runs.
        parts.append(f"<details open><summary>final metrics</summary><table>{head}{body}</table></details>")
    failed = {r.key for r in status.replicas if r.state in (ReplicaState.FAILED, ReplicaState.LOST)}
    labels = {row.key: row.label for row in view.rows}
    shown = sorted(view.logs, key=lambda key: (key not in failed, list(labels).index(key) if key in labels else 0))
    for key in shown[:FINAL_LOG_REPLICAS]:
        opened = " open" if key in failed else ""
        parts.append(
            f"<details class='px-final-log' data-replica='{escape(key)}'{opened}><summary>log of "
            f"{escape(labels.get(key, key))}{' (failed)' if key in failed else ''}</summary>"
            f"{log_html(view.logs[key])}</details>"
        )
    if view.tensorboard:
        parts.append(
            f"<details class='px-final-tensorboard' open><summary>TensorBoard</summary>{view.tensorboard}</details>"
        )
    parts.append(
        f"<small style='opacity:0.7'>final state of run {escape(view.run_id)}; "
        f"<code>%px_attach {escape(view.run_id)}</code> shows the monitor again (interactive plot, "
        f"TensorBoard button), <code>%px_tensorboard {escape(view.run_id)}</code> its TensorBoard</small></div>"
    )
    return "".join(parts)


def final_text(view: FinalView) -> str:
    from .text import failure_text, outcome_line, table

    status = view.status
    lines = [
        outcome_line(status, view.names)
        if status.state == RunState.SUCCEEDED
        else failure_text(status, names=view.names),
        rows_text(view.rows),
    ]
    metrics = final_metrics(view.metrics)
    if metrics:
        lines.append(table(("METRIC", "REPLICA", "LAST", "STEP"), metrics[:64]))
    return "\n".join(lines)


def final_bundle(view: FinalView) -> dict[str, str]:
    """The output that replaces the live widget when the run has ended."""
    return {"text/html": final_html(view), "text/plain": final_text(view)}
