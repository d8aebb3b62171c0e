"""A replica process's metrics ledger: what `jupyter_px.tracking` accepted, wrote and dropped.

Metric points wait in a replica's memory between `log_metrics` and the tracking thread's write,
so a process killed before it flushed loses them, and nobody can say how many from the outside.
The ledger is a small file beside the process's metrics file (`<metrics file>.ledger`), mapped
into the process's memory (`mmap`, shared): each count is a memory write that the kernel keeps
even when the process is SIGKILLed an instant later. Whoever owns the run (the local supervisor,
a follower on a file system the replicas share) reads it once the process is gone and knows
exactly how many accepted points never reached the file, how far TensorBoard's file is behind
the JSONL (`runstore.settle` closes that gap), and, while the process still runs, whether it
holds anything unwritten.

Standard library only: `jupyter_px.tracking` imports it inside every replica.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass
from pathlib import Path

#: A ledger is `.<metrics file name>.ledger` beside it: `.worker-0.jsonl.ledger` (hidden, so a
#: listing of the metrics shows the metrics).
LEDGER_SUFFIX = ".ledger"

#: The slots, in order: 8-byte signed integers in the machine's byte order (the writer and the
#: reader run on the same machine, or on machines of one cluster sharing one file system).
SLOTS = (
    "version",  # LEDGER_VERSION once the writer has set it up
    "pid",  # the process that writes this ledger
    "accepted",  # points `log_metrics` queued (dropped points are not accepted)
    "written",  # points whose JSONL line is in the metrics file
    "dropped",  # points refused because the queue was full
    "jsonl_end",  # the metrics file's size after this process's last written line
    "tensorboard_end",  # the JSONL offset up to which this process's points are in TensorBoard too
    "tensorboard_calls",  # the tracker's point count at `tensorboard_end` (TensorBoard's step for step-less points)
    "sigterm_flushes",  # 1 while SIGTERM's handler is tracking's own (flush, then die), else 0
    "tensorboard_file_end",  # bytes in the process's event file once it held the points up to tensorboard_end
)
VERSION, PID, ACCEPTED, WRITTEN, DROPPED, JSONL_END, TB_END, TB_CALLS, SIGTERM_FLUSHES, TB_FILE_END = range(len(SLOTS))
LEDGER_VERSION = 1
_SIZE = 128  # bytes: room for more slots without a new version


def ledger_path(metrics_file: str | os.PathLike) -> Path:
    path = Path(metrics_file)
    return path.with_name(f".{path.name}{LEDGER_SUFFIX}")


class LedgerWriter:
    """The writing side, inside the replica process: `counts[ACCEPTED] += 1` and so on.

    `counts` is a memoryview of the shared mapping (a slot write costs about as much as an
    attribute update), so the hot path of `log_metrics` stays a few hundred nanoseconds."""

    def __init__(self, metrics_file: str | os.PathLike):
        path = ledger_path(metrics_file)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            os.ftruncate(fd, _SIZE)
            self._map = mmap.mmap(fd, _SIZE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        self.path = path
        self.counts = memoryview(self._map).cast("q")
        self.counts[PID] = os.getpid()
        self.counts[VERSION] = LEDGER_VERSION


@dataclass(frozen=True)
class Ledger:
    """One ledger as read from its file: the counts of one tracker process."""

    path: Path
    pid: int
    accepted: int
    written: int
    dropped: int
    jsonl_end: int
    tensorboard_end: int
    tensorboard_calls: int
    sigterm_flushes: bool
    tensorboard_file_end: int

    @property
    def unwritten(self) -> int:
        """Points accepted but not (yet) in the JSONL: lost, once the process is gone."""
        return max(0, self.accepted - self.written)

    @property
    def tensorboard_behind(self) -> bool:
        """Whether the JSONL holds points of this process that its TensorBoard file does not (yet)."""
        return 0 <= self.tensorboard_end < self.jsonl_end

    @property
    def metrics_file(self) -> Path:
        return self.path.with_name(self.path.name[1 : -len(LEDGER_SUFFIX)])

    def writer_running(self) -> bool:
        """Whether the process that writes this ledger still runs (a zombie does not: it writes
        nothing any more). Its counts are final once it does not."""
        if self.pid <= 0:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as stat:
                return stat.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
        except OSError:
            return True


def read_ledger(path: Path) -> Ledger | None:
    """The ledger at `path`, or None when there is none (or it is not one: a planted link, a file
    of another size, a version this code does not know). Never follows a symbolic link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = os.pread(fd, _SIZE, 0)
    finally:
        os.close(fd)
    if len(data) != _SIZE:
        return None
    slots = memoryview(data).cast("q")
    if slots[VERSION] != LEDGER_VERSION:
        return None
    return Ledger(
        path=path,
        pid=slots[PID],
        accepted=slots[ACCEPTED],
        written=slots[WRITTEN],
        dropped=slots[DROPPED],
        jsonl_end=slots[JSONL_END],
        tensorboard_end=slots[TB_END],
        tensorboard_calls=slots[TB_CALLS],
        sigterm_flushes=bool(slots[SIGTERM_FLUSHES]),
        tensorboard_file_end=slots[TB_FILE_END],
    )


def all_ledgers(metrics_dir: Path) -> list[Ledger]:
    """Every ledger in a run's metrics directory (all replicas, all processes)."""
    try:
        names = sorted(os.listdir(metrics_dir))
    except OSError:
        return []
    ledgers = (read_ledger(metrics_dir / n) for n in names if n.startswith(".") and n.endswith(LEDGER_SUFFIX))
    return [ledger for ledger in ledgers if ledger is not None]


def replica_ledgers(metrics_dir: Path, key: str) -> list[Ledger]:
    """Every ledger of replica `key` (`worker-0`): one per process of it that logged metrics."""
    return [
        ledger
        for ledger in all_ledgers(metrics_dir)
        if (stem := ledger.metrics_file.name) == f"{key}.jsonl"
        or (stem.startswith(f"{key}.rank") and stem.endswith(".jsonl"))
    ]
