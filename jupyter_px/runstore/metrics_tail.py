"""The last step a replica logged, read from the end of its metrics files: what a restarted attempt
records as where the previous one got to (the local supervisor's gang restart, Slurm's requeue,
a group torchrun formed again: the last step before a given time, since the new group has
logged again by the time it is seen).

Only the file's last `TAIL_BYTES` are read, so a run with a million points costs one seek; a
partly written last line is skipped for the one before it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

#: How much of a metrics file's end is read for its last step (lines are well under 1 KiB).
TAIL_BYTES = 8192
#: ... for its last step before a time: the points logged after it are read past too.
TIMED_TAIL_BYTES = 1 << 16


def last_step(files: Iterable[str | os.PathLike[str]]) -> int | None:
    """The greatest last step among `files` (a run's or a replica's metrics JSONL); None when none
    has a step (or none can be read)."""
    steps = [step for step in map(tail_step, files) if step is not None]
    return max(steps) if steps else None


def tail_step(path: str | os.PathLike[str]) -> int | None:
    """The step of the last complete point of one metrics file, None when it has none."""
    for raw in reversed(_tail_lines(path, TAIL_BYTES)):
        try:
            step = json.loads(raw).get("step")
        except (ValueError, AttributeError):
            continue
        if isinstance(step, int):
            return step
    return None


def step_at(files: Iterable[str | os.PathLike[str]], when: float) -> int | None:
    """The greatest step any of `files` logged at or before `when` (a point's `time`), among the
    last `TIMED_TAIL_BYTES` of each; None when none did."""
    steps = []
    for path in files:
        for raw in _tail_lines(path, TIMED_TAIL_BYTES):
            try:
                point = json.loads(raw)
                step, then = point.get("step"), point.get("time")
            except (ValueError, AttributeError):
                continue
            if isinstance(step, int) and isinstance(then, (int, float)) and then <= when:
                steps.append(step)
    return max(steps) if steps else None


def _tail_lines(path: str | os.PathLike[str], size: int) -> list[bytes]:
    """The lines of the file's last `size` bytes (the first may be cut); none when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - size))
            return handle.read().splitlines()
    except OSError:
        return []
