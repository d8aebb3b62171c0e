"""Who the others waited for: the replicas of a stacks snapshot that were not in a collective.

When a rank's collective times out (`collective_timeout.is_timeout`), the rank that failed is the
one that waited, not the one at fault: the fault is with a rank that never joined (stuck in a
DataLoader, asleep, past a barrier it skipped). A snapshot of the ranks still alive at that
moment tells them apart by their main thread: a rank waiting in a collective is inside
`torch.distributed` (`all_reduce`, `barrier`, `work.wait()`), inside DDP's own module, or inside
autograd's `backward` (where DDP's reducer all-reduces the gradients); any other stack (user
code, a DataLoader's `__next__`, `time.sleep`) is a rank that never joined, provided the user's
code is still on it: a rank whose code has returned or raised (a peer that timed out a moment
earlier and is now exiting: torch's own teardown) is not the one the others wait for.
"""

from __future__ import annotations

import os
from typing import Any

#: Where a rank that waits in a collective has its innermost library frame (paths under torch/).
_WAITING_IN = (
    os.path.join("torch", "distributed") + os.sep,
    os.path.join("torch", "nn", "parallel", "distributed.py"),
    os.path.join("torch", "autograd") + os.sep,
)


def _main_frames(entry: dict[str, Any]) -> list[dict[str, Any]]:
    return next((t["frames"] for t in entry.get("threads") or [] if t.get("main")), [])


def waiting(entry: dict[str, Any]) -> bool | None:
    """Whether a snapshot's replica was waiting in a collective; None where it gave no stack."""
    if entry.get("error") or not entry.get("threads"):
        return None
    return any(any(part in frame["file"] for part in _WAITING_IN) for frame in _main_frames(entry))


def not_waiting(snapshot: dict[str, Any]) -> list[str]:
    """The keys of the snapshot's replicas whose code is running outside every collective."""
    return [
        entry["key"]
        for entry in snapshot.get("replicas") or []
        if waiting(entry) is False and any(frame.get("user") for frame in _main_frames(entry))
    ]


def where(snapshot: dict[str, Any], key: str) -> str | None:
    """The summary line of `key`'s group in the snapshot (`<module>, cell [1] line 7: time.sleep(60)`)."""
    return next((g["summary"] for g in snapshot.get("groups") or [] if key in g["replicas"]), None)


def user_line(snapshot: dict[str, Any], key: str) -> str | None:
    """`cell [4] line 9` (or `train.py line 9`): the innermost line of the user's code on `key`'s
    main thread in the snapshot."""
    entry = next((e for e in snapshot.get("replicas") or [] if e.get("key") == key), None)
    frame = next((f for f in _main_frames(entry or {}) if f.get("user")), None)
    if frame is None:
        return None
    if frame.get("cell"):
        return f"{frame['cell']} line {frame['cell_line']}"
    return f"{os.path.basename(frame['file'])} line {frame['line']}"
