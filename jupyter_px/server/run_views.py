"""The run views the server keeps: one `RunViewSource` per run the extension polls.

`GET px/api/runs/<ref>/view` answers the run's view-model (`presentation.view_models.RunViewModel`,
checked against the sidebar's `IRunViewModel`), the one shape every front-end shows. A source keeps
its run's readers between polls, so a view polled every second reads only what the run's logs and
metrics grew by; at most `size` are kept (least recently used go first). What changed since the
previous run of the same cell is the comparison's (`compare.changes.ChangesSince`), over the
run service's one digest cache (`RunService.digests`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from ..compare.changes import ChangesSince
from ..presentation.run_view import RunViewSource
from ..service import RunService

__all__ = ["RunViews"]


class RunViews:
    """`RunViewSource`s by run id for the server's life (at most `size`). Thread-safe."""

    def __init__(self, service: RunService, size: int = 64):
        self.service, self.size = service, size
        self._lock = threading.Lock()
        self._sources: OrderedDict[str, RunViewSource] = OrderedDict()

    def view(self, run_id: str) -> dict[str, Any]:
        """The run's view-model as JSON (RunNotFound once the run is gone)."""
        with self._lock:
            source = self._sources.pop(run_id, None)
        if source is None:
            record = self.service.record(run_id)
            source = RunViewSource(self.service, run_id, changes=ChangesSince(self.service, record))
        with self._lock:
            self._sources[run_id] = source
            while len(self._sources) > self.size:
                self._sources.popitem(last=False)
        return source.view().model_dump(mode="json")

    def forget(self, run_id: str) -> None:
        with self._lock:
            self._sources.pop(run_id, None)
