"""Runs and topologies as plain text: what the CLI prints and what the magics show in a terminal.

Every surface that writes text about a run goes through here, so `jupyter px status`,
`%px_status`, `RunFailed` and `run --wait` say the same thing in the same words.

User text (run names, replica messages) goes through `printable` before it reaches a terminal:
a run named with escape codes must not retitle the terminal or color the output after it, a
newline in a name must not break a table row, and a 300-character name must not make a table
300 columns wide.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..run_text import (  # noqa: F401 (the words every surface shares, re-exported here)
    FAILED_REPLICA_STATES,
    LAST_CELL_WIDTH,
    failed_replicas,
    failure_headline,
    failure_text,
    metric_losses,
    outcome_message,
    printable,
    replica_failure,
)
from ..runstore import RunState, RunStatus
from ..topology import TopologyError
from ..topology.quantities import format_number
from ..topology.ranges import value_range
from .colors import STATE_COLORS, ansi_state
from .labels import ReplicaNames, replica_label

#: Widest a table cell gets (the last column, usually a free-text message, gets `LAST_CELL_WIDTH`).
CELL_WIDTH = 48


# ---- times -----------------------------------------------------------------------------------


def duration(seconds: float | None) -> str:
    """`12.3s`, `4m05s`, `2h07m`; `-` when unknown."""
    if seconds is None or seconds < 0:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def elapsed(start: float | None, end: float | None, now: float | None = None) -> str:
    """How long from `start` to `end` (or to now while it runs)."""
    if not start:
        return "-"
    return duration((end or (now if now is not None else time.time())) - start)


def timestamp(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


# ---- tables ----------------------------------------------------------------------------------


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[object]],
    title: str = "",
    paint: Callable[[int, str], str] | None = None,
) -> str:
    """Columns padded to their widest cell; every cell made `printable` and clipped. `paint`
    (column, padded cell) -> cell colors body cells after the padding (`state_painter`)."""
    last = len(headers) - 1
    cells = [list(headers)] + [
        [printable(cell, LAST_CELL_WIDTH if i == last else CELL_WIDTH) for i, cell in enumerate(row)] for row in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for number, row in enumerate(cells):
        padded = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        if paint is not None and number:
            padded = [paint(i, cell) for i, cell in enumerate(padded)]
        lines.append("  ".join(padded).rstrip())
    return "\n".join(([title] if title else []) + lines)


#: What the runs list adds to the state of a run whose owner a read found gone.
OWNERLESS = "no owner"


def owner_warning(run_id: str, problem: str, keep_hint: str | None = "jupyter px follow {run_id}") -> str:
    """`run X: the supervisor (pid 123) is gone; its state is the last one recorded (...)`: what
    a read says about a run whose lifecycle owner is missing (a read never repairs it)."""
    hint = f"; {keep_hint.format(run_id=run_id)} brings it up to date" if keep_hint else ""
    return f"run {run_id}: {printable(problem, LAST_CELL_WIDTH)}; its state is the last one recorded{hint}"


RUNS_HEADERS = ("RUN", "NAME", "STATE", "BACKEND", "REPLICAS", "FROM", "CREATED", "DURATION")


def runs_rows(summaries: Iterable[Mapping[str, Any]]) -> list[tuple[str, ...]]:
    """Rows of the runs list (`jupyter px runs`, `%px_runs`) from `run_json.run_summary` dicts."""
    rows: list[tuple[str, ...]] = []
    for run in summaries:
        counts = run["replica_counts"]
        rows.append(
            (
                run["run_id"],
                run["name"] or "-",
                run["state"] + (f" ({OWNERLESS})" if run.get("owner_problem") else ""),
                run["backend"],
                ", ".join(f"{n} {state}" for state, n in counts.items()) or "-",
                run["submitted_from"] or "-",
                timestamp(run["created_at"]),
                elapsed(run["started_at"], run["finished_at"]),
            )
        )
    return rows


STATUS_HEADERS = ("REPLICA", "STATE", "PID", "EXIT", "SIGNAL", "RESTARTS", "ADDRESS", "REASON", "MESSAGE")


def status_heading(status: RunStatus) -> str:
    """`run X: Failed (reason) - message`, when it started and how long it took, and a line for
    each replica that lost metric points (`metric_losses`)."""
    head = f"run {status.run_id}: {status.state.value}"
    if status.reason:
        head += f" ({printable(status.reason)})"
    message = outcome_message(status)
    if message:
        head += f" - {printable(message, LAST_CELL_WIDTH)}"
    when = f"started {timestamp(status.started_at)}, duration {elapsed(status.started_at, status.finished_at)}"
    lines = [head, when + (f"; replicas {status.launch}" if status.launch else ""), *attempt_lines(status)]
    return "\n".join(lines + [printable(line) for line in metric_losses(status)])


def attempt_lines(status: RunStatus) -> list[str]:
    """`attempt 2 of 3, from step 1,200` and a line per attempt that ended, for a run with a
    run-level retry (`termination`) or elastic workers once an attempt ended (`with 2 workers`;
    a worker that `went on without it`, one that `came back`)."""
    if not status.attempts:
        return []
    current = status.attempts[-1]
    since = f", from step {current.resumed_from:,}" if current.resumed_from is not None else ""
    lines = [f"attempt {status.attempt} of {status.max_attempts}{_workers(current.workers)}{since}"]
    for attempt, following in zip(status.attempts, [*status.attempts[1:], None], strict=True):
        if attempt.failed is None and attempt.returned is None:
            continue
        then = ""
        if attempt.retried and attempt.failed is not None:  # (a worker that came back says so itself)
            after = following.workers if following is not None else None
            fewer = after is not None and attempt.workers is not None and after < attempt.workers
            then = "; went on without it" if fewer else "; started again"
        lines.append(f"  attempt {attempt.attempt}: {printable(attempt.describe())}{then}")
    return lines


def _workers(count: int | None) -> str:
    return "" if count is None else f" with {count} worker{'s' if count != 1 else ''}"


def status_rows(status: RunStatus, tf_chief: bool = False) -> list[tuple[str, ...]]:
    """One row per replica (`jupyter px status`, `%px_status`), named as the job calls it
    (`labels.replica_label`: a TensorFlow master is `chief`)."""
    return [
        (
            replica_label(r.role, r.index, tf_chief),
            r.state.value,
            str(r.pid or "-"),
            "-" if r.exit_code is None else str(r.exit_code),
            r.signal or "-",
            str(r.restarts),
            r.address or "-",
            r.reason or "-",
            stall_text(r) or r.message or (f"memory limit {r.memory_limit_mib:g} MiB" if r.memory_limit_mib else ""),
        )
        for r in status.replicas
    ]


def stall_text(replica: Any, now: float | None = None) -> str:
    """`Stalled: no step for 75 s (limit 60 s)` for a Running replica marked stalled, else ''."""
    if replica.stalled_since is None or replica.state.value != "Running":
        return ""
    quiet = (time.time() if now is None else now) - replica.stalled_since
    return f"Stalled: no step for {quiet:.0f} s (limit {replica.stall_after_s or 0:.0f} s)"


def replica_states(status: RunStatus, many: int = 8, tf_chief: bool = False) -> str:
    """`chief Running  worker-0 Succeeded(1r)`, or counts when there are more than `many`."""
    if len(status.replicas) <= many:
        return "  ".join(
            f"{replica_label(r.role, r.index, tf_chief)} {r.state.value}" + (f"({r.restarts}r)" if r.restarts else "")
            for r in status.replicas
        )
    return ", ".join(f"{state} {n}" for state, n in status.counts().items())


def state_painter(column: int, enabled: bool) -> Any:
    """For `table(..., paint=)`: the state word of `column` in its color (`colors.ansi_state`)
    when `enabled` (a terminal that wants color, `colors.use_color`), else None."""
    if not enabled:
        return None

    def paint(index: int, cell: str) -> str:
        word = cell.strip().split(" ", 1)[0]
        if index != column or word not in STATE_COLORS:
            return cell
        return ansi_state(word, word) + cell[len(word) :]

    return paint


# ---- failures --------------------------------------------------------------------------------


def outcome_line(status: RunStatus, names: ReplicaNames | None = None) -> str:
    """`run X Succeeded in 12.3s: message` (or the failure headline); replicas named by `names`."""
    if status.state == RunState.SUCCEEDED:
        took = elapsed(status.started_at, status.finished_at)
        message = outcome_message(status)
        line = f"run {status.run_id} Succeeded in {took}" + (
            f": {printable(message, LAST_CELL_WIDTH)}" if message else ""
        )
        return "\n".join([line, *(printable(loss) for loss in metric_losses(status, names))])
    return failure_headline(status)


# ---- topologies ------------------------------------------------------------------------------


def topology_problems(
    error: TopologyError, where: str | None = None, options: Mapping[str, object] | None = None
) -> str:
    """`invalid topology: path: message`, or a header and one indented line per problem.

    `options` maps a field path to the command-line option and value that set it (`--workers
    -1`), so an invalid override is reported as what the user typed.
    """
    lines = []
    for problem in error.problems:
        option = (options or {}).get(problem.path)
        lines.append(f"{option}: {problem.message}" if option else str(problem))
    place = f" in {where}" if where else ""
    if len(lines) == 1:
        return f"invalid topology{place}: {lines[0]}"
    return f"invalid topology{place} ({len(lines)} problems):\n" + "\n".join(f"  {line}" for line in lines)


def memory_text(mib: float) -> str:
    """A memory size in MiB as people read it: `512 MiB`, `4 GiB`, `1.5 GiB`."""
    if mib >= 1024:
        gib = round(mib / 1024, 2)
        return f"{format_number(gib)} GiB"
    return f"{format_number(round(mib, 2))} MiB"


def resource_range(value: Any, unit: Any = None) -> str:
    """`2`, `0.5–1`, `up to 2`, `at least 1` (`ranges.quantity_range`; `unit` formats a number,
    e.g. `memory_text`)."""
    return value_range(value, unit)


def resources_text(resources: Any) -> str:
    """`cpu 0.5–1, mem up to 4 GiB, gpu 1` for a replica's resources."""
    parts = [
        f"{label} {resource_range(value, unit)}"
        for label, value, unit in (
            ("cpu", resources.cpu, None),
            ("mem", resources.memory, memory_text),
            ("gpu", resources.gpu, None),
        )
        if value is not None
    ]
    return ", ".join(parts) or "-"


# ---- TensorBoard -----------------------------------------------------------------------------


def tensorboard_text(result: Any, base_url: str | None = None) -> str:
    """`TensorBoard: <url>` for a started or reused server, else why it could not start."""
    from .. import tensorboard

    if isinstance(result, tensorboard.Failed):
        return f"TensorBoard could not start: {result.reason}"
    return f"TensorBoard: {result.info.url(base_url)}"
