"""Which request a display update from a background thread goes out under, so that every front
end keeps it: JupyterLab, and a notebook executed headless (nbclient, papermill, jupyter-scheduler).

A kernel message names its parent request. The front ends treat an `update_display_data`
differently:

* JupyterLab routes it by display id to the outputs that showed that id, whatever its parent.
* nbclient reads IOPub only while it executes a cell, keeps only the messages whose parent is
  that cell's request (`NotebookClient._async_poll_output_msg`), and stops at the cell's `idle`
  status; among those, an update with a known display id rewrites the earlier output
  (`_update_display_id`). An update sent under the request of the cell that showed the output,
  after that cell ended, is dropped, and the saved file keeps the live monitor.

So an update goes out under the request that is executing now (IPython's `pre_run_cell` /
`post_run_cell` bracket it; ipykernel keeps the parent header in a context variable, so the
context copied in `pre_run_cell` carries it), and when no cell is executing, under the fallback
context (the cell that showed the output, for a live front end). An update that could not go out
inside a request is sent again at the end of the next cell, in its `post_run_cell`, which runs
before the cell's `idle` status: nbclient, which executes the cells back to back, records it there.
`post_run_cell` also lets each watcher look at its run first, so a run that ended just before a
cell returned is written into that cell's request instead of racing its `idle`.

One tracker per IPython shell (`tracker(shell)`); watchers are held weakly.
"""

from __future__ import annotations

import contextvars
import threading
import weakref
from collections.abc import Callable
from typing import Any, Protocol

_TRACKERS: weakref.WeakKeyDictionary[Any, RequestTracker] = weakref.WeakKeyDictionary()
_TRACKERS_LOCK = threading.Lock()


class Watcher(Protocol):
    def at_cell_end(self) -> None:
        """Called in the shell's thread at the end of each cell, inside its request."""


class RequestTracker:
    """The request of the cell executing now (None between cells), and the watchers to call at
    the end of each cell."""

    def __init__(self, shell: Any):
        self._lock = threading.RLock()
        self._current: contextvars.Context | None = None
        self._watchers: weakref.WeakSet[Any] = weakref.WeakSet()
        shell.events.register("pre_run_cell", self._pre_run_cell)
        shell.events.register("post_run_cell", self._post_run_cell)

    @property
    def executing(self) -> bool:
        return self._current is not None

    def watch(self, watcher: Watcher) -> None:
        self._watchers.add(watcher)

    def unwatch(self, watcher: Watcher) -> None:
        self._watchers.discard(watcher)

    def send(self, update: Callable[[], None], fallback: contextvars.Context | None) -> bool:
        """Run `update` (which sends a message) under the executing cell's request, else under
        `fallback`; True when it went out inside an executing cell's request."""
        with self._lock:  # held while sending: the cell's idle cannot overtake the update
            if self._current is not None:
                self._current.copy().run(update)
                return True
        (fallback.copy() if fallback is not None else contextvars.copy_context()).run(update)
        return False

    def _pre_run_cell(self, *_args: Any) -> None:
        with self._lock:
            self._current = contextvars.copy_context()

    def _post_run_cell(self, *_args: Any) -> None:
        for watcher in list(self._watchers):  # not under the lock: a watcher takes its own locks
            try:
                watcher.at_cell_end()
            except Exception:  # a watcher's trouble must never fail the user's cell
                import logging

                logging.getLogger(__name__).exception("jupyter-px: end-of-cell update failed")
        with self._lock:
            self._current = None


def tracker(shell: Any) -> RequestTracker:
    """The tracker of `shell` (an IPython shell), created and hooked in on first use."""
    with _TRACKERS_LOCK:
        found = _TRACKERS.get(shell)
        if found is None:
            found = _TRACKERS[shell] = RequestTracker(shell)
        return found
