"""Where checkpoints live in a run's outputs and how they are listed: standard library only
(replicas import it through `jupyter_px.tracking`; the supervisor lists them into the status).

    outputs/checkpoints/<scope>/step-<12 digits>.<format>

`scope` is one replica's key (`worker-1`; `worker-1.rank2` for a second process of a replica
that runs several) for checkpoints saved per rank, or `shared` for one checkpoint of the whole
run. The step is zero-padded so names sort by step. A checkpoint is one file, written under a
temporary name beginning with `.` and renamed into place (`os.replace` is atomic on POSIX), so
a name without the dot is always a complete checkpoint; a writer killed midway leaves only a
dot-file, which listings skip and the next save of that scope removes.

The outputs of a run continue across its attempts (a gang restart) and, for a trial that a
Hyperband sweep with `resume: true` keeps, into its next run's outputs (copied there on first
use), so the newest checkpoint here is what a resumed replica should load.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from dataclasses import dataclass

CHECKPOINTS_DIR = "checkpoints"
#: Set by the run's owner in an attempt after a gang restart: the newest step that every scope
#: has a complete checkpoint of (`newest_step`); `tracking.load_checkpoint` loads that one.
RESUME_AT_ENV = "PX_CHECKPOINT_STEP"
SHARED_SCOPE = "shared"
#: Formats by file suffix: `torch.save`/`torch.load`, or the standard library's pickle.
FORMATS = ("pt", "pkl")
_NAME = re.compile(r"^step-(\d{12})\.(pt|pkl)$")
_SCOPE = re.compile(r"^[a-z]{1,16}-\d{1,6}(\.rank\d{1,4})?$|^shared$")


@dataclass(frozen=True)
class CheckpointFile:
    """One complete checkpoint on disk."""

    scope: str
    step: int
    path: str
    format: str
    time: float  # when it was written (the file's mtime)
    size: int  # bytes


def file_name(step: int, fmt: str) -> str:
    return f"step-{step:012d}.{fmt}"


def scope_dir(outputs: str, scope: str) -> str:
    if not _SCOPE.match(scope):
        raise ValueError(f"checkpoint scope {scope!r} is not a replica key (worker-1) or 'shared'")
    return os.path.join(outputs, CHECKPOINTS_DIR, scope)


def in_scope(outputs: str, scope: str) -> list[CheckpointFile]:
    """The complete checkpoints of one scope, oldest first (by step)."""
    folder = scope_dir(outputs, scope)
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for name in names:
        match = _NAME.match(name)
        if match is None:
            continue
        path = os.path.join(folder, name)
        try:
            stat = os.stat(path)
        except FileNotFoundError:  # pruned meanwhile
            continue
        found.append(CheckpointFile(scope, int(match.group(1)), path, match.group(2), stat.st_mtime, stat.st_size))
    found.sort(key=lambda c: (c.step, c.time))
    return found


def all_checkpoints(outputs: str) -> list[CheckpointFile]:
    """Every complete checkpoint of a run, by scope then step."""
    root = os.path.join(outputs, CHECKPOINTS_DIR)
    try:
        scopes = sorted(name for name in os.listdir(root) if _SCOPE.match(name))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [c for scope in scopes for c in in_scope(outputs, scope)]


def newest_step(outputs: str, scopes: Collection[str] | None = None) -> int | None:
    """The step of the newest complete checkpoint the whole run can resume from: the newest step
    every scope has a checkpoint of (a gang is only as far as the slowest of its replicas, and
    each must load the same step), or None when there is none.

    Replicas asked to checkpoint now (`tracking.checkpoint_requested`, a Slurm job before its
    time limit) may save at steps one apart, as the request reaches each between two of its
    steps: then their common periodic step is the one they resume from. `scopes`: only these
    count (the replicas taking part in an attempt of elastic workers, or `shared`)."""
    steps: dict[str, set[int]] = {}
    for checkpoint in all_checkpoints(outputs):
        if scopes is None or checkpoint.scope in scopes:
            steps.setdefault(checkpoint.scope, set()).add(checkpoint.step)
    common = set.intersection(*steps.values()) if steps else set()
    return max(common) if common else None
