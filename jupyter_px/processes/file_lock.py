"""Advisory whole-file locks (`flock`) between the processes that share a run store.

Two submits deciding about one warm template, two keepers starting one run's follower, two
readers polling one Slurm queue: each is "one process at a time" on one machine's (or one
shared filesystem's) file, and the lock goes with the process, so one that dies holding it
never leaves it taken. Standard library only.
"""

from __future__ import annotations

import contextlib
import fcntl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

#: How often a lock held by another process is tried again while a timeout runs.
RETRY_S = 0.05


def acquire(path: Path, timeout: float | None = None) -> IO[str] | None:
    """The open lock file at `path`, locked: waited for (for ever, or `timeout` seconds; 0
    tries once). None when another process still holds it. The lock is the caller's until it
    closes the file (or exits). The file's folder is created."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+")  # noqa: SIM115 (the caller holds it)
    if timeout is None:
        fcntl.flock(handle, fcntl.LOCK_EX)
        return handle
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            if time.monotonic() >= deadline:
                handle.close()
                return None
            time.sleep(RETRY_S)


@contextlib.contextmanager
def locked(path: Path, timeout: float | None = None) -> Iterator[bool]:
    """Hold the lock at `path` for the block: True inside it when held, False when `timeout`
    ran out first (the block runs either way, so that it can say what it does instead)."""
    handle = acquire(path, timeout)
    try:
        yield handle is not None
    finally:
        if handle is not None:
            handle.close()
