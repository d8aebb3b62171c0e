"""Scalars written as TensorBoard event files into a replica's logdir: the one writer of them.

Two writers of the same points use it: `jupyter_px.tracking` inside a replica that shares a disk
with the run store, and the Kubernetes follower, for metrics parsed back from a replica's log
(`backends/kubernetes/tensorboard_events.py`). It is shipped to pods beside `tracking/`
(`backends/kubernetes/shared/payload.py`), so it imports only the standard library and `.layout` at
import time, and TensorBoard when a writer is made.

Records are framed as TensorBoard's own `RecordWriter` frames them (`record_crc.frame`, with the
checksums in C: TensorBoard's pure-Python CRC was most of a point's cost) and the file starts
with the same version event, so TensorBoard 2.x reads it. `EventFileWriter` itself is not used:
it resolves `tensorboard.compat.tf`, which imports all of TensorFlow where it is installed (2 s
and a GB of memory in every replica, before the first scalar is visible).

Files end with `EVENTS_FILE_SUFFIX` so readers of the run store can tell them from event files
the user's own code writes into the same directory (their points are in the metrics JSONL).
"""

from __future__ import annotations

import itertools
import os
import socket
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .layout import EVENTS_FILE_SUFFIX
from .record_crc import frame

__all__ = ["ScalarEventWriter"]

#: Distinct file names for the writers of one process that open in the same second.
_file_ids = itertools.count()


class ScalarEventWriter:
    """`write([(step, wall_time, {name: value}), ...])` appends one event per record to a file of
    its own in `logdir`, opened at the first write. `source` names the writer in the file's
    metadata. Not thread-safe: one writer per thread, or a lock around `write`."""

    def __init__(self, logdir: Path | str, source: str, anchor: Path | str | None = None):
        # Imported now, in the thread that makes the writer: a first write may come at
        # interpreter exit, when importing can fail ("can't register atexit after shutdown").
        from tensorboard.compat.proto import event_pb2, summary_pb2

        self._event_pb2, self._summary_pb2 = event_pb2, summary_pb2
        self.logdir = Path(logdir)
        #: The folder that must already exist: only the levels between it and `logdir` are
        #: made, so a deleted run directory is never made again by a late write.
        self.anchor = Path(anchor) if anchor is not None else self.logdir.parent
        self.source = source
        self._file: Any = None
        #: The event file, once the first write has opened it.
        self.path: Path | None = None
        # One reusable Event per distinct tuple of metric names: filling in a template and
        # serializing it costs a third of building the nested messages for every record.
        self._templates: dict[tuple[str, ...], tuple[Any, list[Any]]] = {}

    def _open(self) -> None:
        event_pb2 = self._event_pb2
        if not self.anchor.is_dir():
            raise FileNotFoundError(2, "the folder this writer writes under is gone", str(self.anchor))
        for level in reversed([self.logdir, *self.logdir.parents]):
            if level == self.anchor or self.anchor not in level.parents:
                continue
            level.mkdir(exist_ok=True)
        host, pid, number = socket.gethostname(), os.getpid(), next(_file_ids)
        name = f"events.out.tfevents.{int(time.time()):010d}.{host}.{pid}.{number}{EVENTS_FILE_SUFFIX}"
        # Open for the writer's lifetime (closed at exit): not a `with` block.
        self.path = self.logdir / name
        self._file = os.fdopen(os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644), "ab")
        version = event_pb2.Event(
            wall_time=time.time(),
            file_version="brain.Event:2",
            source_metadata=event_pb2.SourceMetadata(writer=self.source),
        )
        self._file.write(frame(version.SerializeToString()))

    def _template(self, names: tuple[str, ...]) -> tuple[Any, list[Any]]:
        if len(self._templates) > 256:
            self._templates.clear()
        Summary = self._summary_pb2.Summary
        event = self._event_pb2.Event(summary=Summary(value=[Summary.Value(tag=n, simple_value=0.0) for n in names]))
        entry = self._templates[names] = (event, list(event.summary.value))
        return entry

    def write(self, records: Iterable[tuple[int, float, Mapping[str, float]]]) -> None:
        """One scalar event per (step, wall_time, values) record, then a flush to the file."""
        if self._file is None:
            self._open()
        templates, framed = self._templates, []
        for step, wall_time, values in records:
            names = tuple(values)
            event, slots = templates.get(names) or self._template(names)
            event.step = step
            event.wall_time = wall_time
            for slot, value in zip(slots, values.values(), strict=False):
                slot.simple_value = value
            framed.append(frame(event.SerializeToString()))
        self._file.write(b"".join(framed))
        self._file.flush()

    @property
    def size(self) -> int:
        """Bytes in the event file after the last `write` (0 before the first)."""
        return self._file.tell() if self._file is not None else 0


def count_records(path: Path, start: int) -> int:
    """How many complete records the event file at `path` holds after byte `start` (a record
    cut short by a kill at its end is not counted). Never follows a symbolic link."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        data = os.pread(fd, max(0, os.fstat(fd).st_size - start), start)
    finally:
        os.close(fd)
    count = position = 0
    while position + 12 <= len(data):  # uint64 length, uint32 crc, data, uint32 crc
        end = position + 12 + int.from_bytes(data[position : position + 8], "little") + 4
        if end > len(data):
            break
        count, position = count + 1, end
    return count
