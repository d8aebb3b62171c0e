"""A run's status in plain words, for every layer: `RunFailed`'s message (api), the CLI and the
magics (through `presentation.text`, which re-exports these) say why a run failed the same way.

Kept below the presentation layer so that the API's exception needs no display code. User text
(run names, replica messages) goes through `printable` before it reaches a terminal: a run named
with escape codes must not retitle the terminal, a newline in a name must not break a table row.
"""

from __future__ import annotations

import unicodedata

from .runstore import ReplicaState, ReplicaStatus, RunStatus
from .runstore.settle import Settled
from .topology.naming import ReplicaNames

LAST_CELL_WIDTH = 160
#: Replica states that make a run fail: shown with their reason and where to read the log.
FAILED_REPLICA_STATES = frozenset({ReplicaState.FAILED, ReplicaState.LOST})
#: Control and format characters (escape codes, newlines, bidi overrides) shown escaped.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def printable(text: object, width: int | None = None) -> str:
    """`text` safe to print on a terminal: control characters escaped (`\\x1b`, `\\n`, `\\u202e`)
    and, given a width, clipped to it with a trailing `…`."""
    value = "" if text is None else str(text)
    if not value.isprintable() or any(unicodedata.category(ch) in _UNSAFE_CATEGORIES for ch in value):
        value = "".join(
            ch.encode("unicode_escape").decode("ascii") if unicodedata.category(ch) in _UNSAFE_CATEGORIES else ch
            for ch in value
        )
    if width is not None and len(value) > width:
        value = value[: max(0, width - 1)] + "…"
    return value


def metric_losses(status: RunStatus, names: ReplicaNames | None = None) -> list[str]:
    """`master-0: 1,204 metric points not written: killed before they were flushed`, one line per
    replica that lost (or dropped) points. The run's message ends with the same lines; surfaces
    that clip the message show these in full (`outcome_message` is the message without them).
    Given `names`, replicas are named as the job calls them (`chief`)."""
    names = names or ReplicaNames()
    lines = []
    for replica in status.replicas:
        notice = Settled(lost=replica.points_lost, dropped=replica.points_dropped).notice(
            names.label(replica.role, replica.index)
        )
        if notice:
            lines.append(notice)
    return lines


def outcome_message(status: RunStatus) -> str | None:
    """The run's message without the metric-loss lines `metric_losses` gives."""
    message = status.message
    for line in metric_losses(status):  # as the backend wrote them: by the store's key
        message = message.replace(f"; {line}", "") if message else message
    return message


def failed_replicas(status: RunStatus) -> list[ReplicaStatus]:
    return [r for r in status.replicas if r.state in FAILED_REPLICA_STATES]


def replica_failure(replica: ReplicaStatus, names: ReplicaNames | None = None) -> str:
    """`worker-1 Failed (Error, exit code 3): exited with code 3` (`chief Failed ...` for a
    TensorFlow master, given its `names`)."""
    details = [replica.reason or "unknown reason"]
    if replica.exit_code is not None:
        details.append(f"exit code {replica.exit_code}")
    elif replica.signal:
        details.append(f"signal {replica.signal}")
    text = (
        f"{(names or ReplicaNames()).label(replica.role, replica.index)} {replica.state.value} ({', '.join(details)})"
    )
    return text + (f": {printable(replica.message, LAST_CELL_WIDTH)}" if replica.message else "")


def failure_headline(status: RunStatus) -> str:
    """`run X Failed: <the run's message>` (without its metric-loss lines: `metric_losses`)."""
    message = outcome_message(status)
    return f"run {status.run_id} {status.state.value}" + (f": {printable(message, LAST_CELL_WIDTH)}" if message else "")


def failure_text(
    status: RunStatus, logs_hint: str | None = None, one_line: bool = False, names: ReplicaNames | None = None
) -> str:
    """Why a run did not succeed: the run's state and message, and each failed replica.

    `logs_hint` is a template (`"jupyter px logs {run_id} --role {role} --index {index}"`) for
    where to read a failed replica's log. One line (an exception message: `RunFailed`, a magic's
    UsageError) names the first replica's log; the multi-line form (the CLI) names each. Given
    `names`, replicas are named (and their role written in the hint) as the job calls them.
    """
    names = names or ReplicaNames()
    bad = failed_replicas(status)
    head = failure_headline(status)
    if one_line:
        text = head + (f" [{'; '.join(replica_failure(r, names) for r in bad)}]" if bad else "")
        if logs_hint and bad:
            text += "; see " + logs_hint.format(run_id=status.run_id, role=names.role(bad[0].role), index=bad[0].index)
        return text
    lines = [head]
    for replica in bad:
        lines.append(f"  {replica_failure(replica, names)}")
        if logs_hint:
            where = logs_hint.format(run_id=status.run_id, role=names.role(replica.role), index=replica.index)
            lines.append(f"  its log: {where}")
    lines += [f"  {printable(line)}" for line in metric_losses(status, names)]
    return "\n".join(lines)
