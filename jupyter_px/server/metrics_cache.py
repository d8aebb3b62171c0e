"""One `MetricsReader` per run for the life of the server, so each poll reads only new bytes.

`MetricsReader` keeps byte offsets per file; a new reader per request would re-parse a whole
run's metrics on every poll of the metrics panel. Readers are not thread-safe, so each has a
lock; the number kept is bounded (least recently used go first). No history budget: clients
ask for "points after time T", so history read later (older times) would never reach them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from ..runstore import RunStore
from ..runstore.metrics import MetricsReader


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

    def points_since(self, run_id: str, since: float | None) -> dict[str, Any]:
        """Every point logged after time `since` (all points when None), per replica and metric,
        with a cursor (the newest point's time) to pass as `since` next time, and progress."""
        lock, reader = self._reader(run_id)
        with lock:
            reader.poll()
            series: dict[str, dict[str, dict[str, list]]] = {}
            cursor = since
            for replica, metrics in reader.data.items():
                for name, points in metrics.items():
                    start = 0
                    if since is not None:
                        times = points.times
                        start = len(times)
                        while start > 0 and times[start - 1] > since:
                            start -= 1
                    if start >= len(points):
                        continue
                    tail = points.tail(start)
                    series.setdefault(replica, {})[name] = {
                        "steps": list(tail.steps),
                        "values": list(tail.values),  # columnar arrays in the reader; JSON wants lists
                        "times": list(tail.times),
                    }
                    newest = max(tail.times)
                    cursor = newest if cursor is None else max(cursor, newest)
            progress = {}
            for replica in reader.replicas():
                step, total = reader.progress(replica)
                if step is not None or total is not None:
                    progress[replica] = {"step": step, "total_steps": total}
            return {
                "series": series,
                "cursor": cursor,
                "progress": progress,
                "history_pending": reader.pending_history,
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
