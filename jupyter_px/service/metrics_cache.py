"""One `MetricsReader` per run for the life of the server, so each poll reads only new bytes.

`MetricsReader` keeps byte offsets per file; a new reader per request would re-parse a whole
run's metrics on every poll of the metrics panel. Readers are not thread-safe, so each has a
lock; the number kept is bounded (least recently used go first). No history budget: the shared
reader reads every file to its end, and each client's points come from its own position cursor
(`jupyter_px.runstore.metrics_cursor`), a bounded page at a time.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from ..runstore import RunStore
from ..runstore.metrics import MetricsReader
from ..runstore.metrics_cursor import PAGE_BUDGET, decode_cursor, read_page


class MetricsCache:
    def __init__(self, store: RunStore, size: int = 32):
        self.store = store
        self.size = size
        self._lock = threading.Lock()
        self._readers: OrderedDict[str, tuple[threading.Lock, MetricsReader]] = OrderedDict()

    def _reader(self, run_id: str) -> tuple[threading.Lock, MetricsReader]:
        with self._lock:
            entry = self._readers.pop(run_id, None)
            if entry is None:
                entry = (threading.Lock(), MetricsReader(self.store.paths(run_id)))
            self._readers[run_id] = entry
            while len(self._readers) > self.size:
                self._readers.popitem(last=False)
            return entry

    def points_since(self, run_id: str, cursor: str | None, budget: int = PAGE_BUDGET) -> dict[str, Any]:
        """The points a client at `cursor` has not had (all of them when None), per replica and
        metric, a page of about `budget` bytes at a time; the cursor to pass back next time;
        each replica's progress; `history_pending` while more points wait for the next poll.

        A cursor this server did not make raises `MetricsCursorError` (before any reading)."""
        after = decode_cursor(cursor) if cursor else {}
        lock, reader = self._reader(run_id)
        with lock:
            reader.poll()
            reader.check_planted()
            page = read_page(reader, after, budget)
            series: dict[str, dict[str, dict[str, list]]] = {}
            for (replica, name), points in page.points.items():
                series.setdefault(replica, {})[name] = {
                    "steps": list(points.steps),
                    "values": list(points.values),  # columnar arrays in the reader; JSON wants lists
                    "times": list(points.times),
                }
            progress = {}
            for replica in reader.replicas():
                step, total = reader.progress(replica)
                if step is not None or total is not None:
                    progress[replica] = {"step": step, "total_steps": total}
            return {
                "series": series,
                "cursor": page.cursor,
                "progress": progress,
                "history_pending": page.more,
            }

    def progress(self, run_id: str) -> dict[str, Any] | None:
        """The most advanced replica's {step, total_steps}, when training reports total_steps."""
        lock, reader = self._reader(run_id)
        with lock:
            reader.poll()
            best = None
            for replica in reader.replicas():
                step, total = reader.progress(replica)
                if total and (best is None or (step or 0) > (best["step"] or 0)):
                    best = {"step": step, "total_steps": total}
            return best
