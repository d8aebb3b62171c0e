"""Metrics parsed from a replica's log, written as TensorBoard scalars into the run's logdir.

Files end with `tracking.EVENTS_FILE_SUFFIX`, as the ones `jupyter_px.tracking` writes on a shared
disk: readers of the run store skip them (the same points are in the metrics JSONL), TensorBoard
shows them. TensorBoard's own framing (`RecordWriter`), not TensorFlow.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any

from ...tracking import EVENTS_FILE_SUFFIX


class EventsWriter:
    def __init__(self, logdir: Path):
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.record_writer import RecordWriter

        self._event_pb2, self._summary_pb2 = event_pb2, summary_pb2
        logdir.mkdir(parents=True, exist_ok=True)
        name = (
            f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}.k8s{EVENTS_FILE_SUFFIX}"
        )
        self._file = open(logdir / name, "ab")  # noqa: SIM115 (open for the follower's life)
        self._records = RecordWriter(self._file)
        version = event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2")
        self._records.write(version.SerializeToString())

    def write(self, records: list[dict[str, Any]]) -> None:
        Summary = self._summary_pb2.Summary
        for number, record in enumerate(records):
            step = record.get("step")
            event = self._event_pb2.Event(
                wall_time=record["time"],
                step=step if isinstance(step, int) else number,
                summary=Summary(value=[Summary.Value(tag=k, simple_value=v) for k, v in record["metrics"].items()]),
            )
            self._records.write(event.SerializeToString())
        self._file.flush()
