"""Metrics parsed from a replica's log, written as TensorBoard scalars into the run's logdir.

The writing is `jupyter_px.runstore.event_writer`'s, the same as `jupyter_px.tracking` uses on a
shared disk (so the follower imports neither `tracking` nor `runner`): files end with
`EVENTS_FILE_SUFFIX`, readers of the run store skip them (the same points are in the metrics
JSONL), TensorBoard shows them. This only turns the log's records into the writer's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ....runstore.event_writer import ScalarEventWriter


class EventsWriter:
    """One replica's event file, for the records `runstore.log_metrics` parses out of its log."""

    def __init__(self, logdir: Path):
        self._writer = ScalarEventWriter(logdir, source="jupyter_px.kubernetes")
        self._calls = 0  # the step of records without one: the call's number, as tracking counts

    def write(self, records: list[dict[str, Any]]) -> None:
        rows = []
        for record in records:
            step = record.get("step")
            rows.append((step if isinstance(step, int) else self._calls, record["time"], record["metrics"]))
            self._calls += 1
        self._writer.write(rows)
