"""What a failed replica's code raised, and where: the runner's failure record in the replica's
status (`ReplicaStatus.failure`) and its message ("exited with code 1: ValueError: boom (cell
[5], line 8)"), so every surface shows the cell, and the monitor can offer "Go to cell". Read by
the local supervisor and the Slurm follower (whose tasks write their records in the run directory
the nodes share) as each replica's failure is seen."""

from __future__ import annotations

from pathlib import Path

from ..code.source_map import read_failure
from ..runstore.models import ReplicaFailure


def code_failure(
    run_dir: Path, role: str, index: int, started_at: float | None, message: str | None
) -> tuple[ReplicaFailure | None, str | None]:
    """(the failure record of this attempt, the message with the exception and place added)."""
    record = read_failure(run_dir, role, index, since=started_at)
    if record is None or not isinstance(record.get("exception"), str):
        return None, message
    try:
        failure = ReplicaFailure.model_validate(record)
    except ValueError:
        return None, message
    where = f" ({failure.label}, line {failure.line})" if failure.label and failure.line else ""
    return failure, f"{message}: {failure.exception}{where}" if message else f"{failure.exception}{where}"
