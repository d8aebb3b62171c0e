"""The loop every simulated controller runs, written once.

Each controller wakes on any change to the registry (or every half second, for time-driven
steps such as back-off and grace periods), makes one pass over what it owns, and when a pass fails
logs it and goes on: the next change retries, as controller-runtime's reconcilers requeue
(sigs.k8s.io/controller-runtime v0.19 pkg/internal/controller/controller.go, reconcileHandler).
"""

from __future__ import annotations

import logging
import threading

from .apiserver import ApiServer

log = logging.getLogger(__name__)

#: Longest wait between passes without a change.
IDLE_PASS_S = 0.5


class ControllerLoop:
    """A controller's thread: `start`, `stop`, and `reconcile_all` once per change."""

    #: The thread's name and the word in a failed pass's log line.
    name = "controller"

    def __init__(self, api: ApiServer):
        self.api = api
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"kube-sim-{self.name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        with self.api.cond:
            self.api.cond.notify_all()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        seen = -1
        while not self._stop.is_set():
            seen = self.api.wait_for_change(seen, IDLE_PASS_S)
            if self._stop.is_set():
                return
            try:
                self.reconcile_all()
            except Exception:  # a controller logs and goes on; the next change retries
                log.exception("kube_sim %s: a pass failed", self.name)

    def reconcile_all(self) -> None:
        """One pass over everything this controller owns (tests may call it to step it)."""
        raise NotImplementedError
