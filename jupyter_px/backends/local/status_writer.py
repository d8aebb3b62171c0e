"""The supervisor's writes of status.json: on every change, at least every `HEARTBEAT_S`, and
the final one retried until it is written.

A status write that fails (a full disk) does not end the run: it is logged once and retried on
the next heartbeat; the final one is retried for `FINAL_WRITE_PATIENCE_S`, so the true outcome is
what the store ends up with.
"""

from __future__ import annotations

import logging
import time

from ...runstore import ReplicaState, RunNotFound, RunState, RunStatus, RunStore
from ...runstore.models import Reason
from .config import FINAL_WRITE_PATIENCE_S, HEARTBEAT_S
from .replica import UNFINISHED

log = logging.getLogger(__name__)


class StatusWriter:
    """Writes one run's `status` (the object the supervisor changes in place) to the store."""

    def __init__(self, store: RunStore, status: RunStatus):
        self.store = store
        self.status = status
        #: Set when the status changed since the last write; the next `write` writes it.
        self.dirty = True
        self.last_write = 0.0
        self.failing = False

    @property
    def heartbeat_due(self) -> float:
        """The monotonic time by which the next write is due even without a change."""
        return self.last_write + HEARTBEAT_S

    def write(self, force: bool = False) -> None:
        """Write status.json when it changed or the heartbeat is due. A failed write (a full disk)
        is logged once and retried on the next heartbeat; the run goes on."""
        now = time.monotonic()
        if not (force or self.dirty or now - self.last_write >= HEARTBEAT_S):
            return
        try:
            self.store.write_status(self.status)
        except OSError as error:
            if not self.failing:
                log.warning("cannot write status.json (%s); retrying every %g s", error, HEARTBEAT_S)
            self.failing = True
            self.last_write = now
            return
        if self.failing:
            log.info("status.json written again")
        self.failing = False
        self.dirty = False
        self.last_write = now

    def write_final(self) -> bool:
        """Write the final status, retrying while it fails: a run whose replica exited 1 on a full
        disk is recorded Failed once space returns, not Lost because its supervisor gave up."""
        deadline = time.monotonic() + FINAL_WRITE_PATIENCE_S
        delay, warned = 0.05, False
        while True:
            try:
                self.store.write_status(self.status)
                if warned:
                    log.info("final status written")
                return True
            except RunNotFound as error:
                log.error("cannot write the final status: %s", error)
                return False
            except OSError as error:
                if time.monotonic() >= deadline:
                    log.error("giving up on the final status after %g s: %s", FINAL_WRITE_PATIENCE_S, error)
                    return False
                if not warned:
                    log.warning("cannot write the final status (%s); retrying until it can be written", error)
                    warned = True
                time.sleep(delay)
                delay = min(delay * 2, 1.0)


def record_start_failure(store: RunStore, run_id: str, error: BaseException) -> None:
    """A run this supervisor cannot even set up is Failed with the reason, not Pending forever."""
    try:
        try:
            status = store.status(run_id)
        except (OSError, ValueError):
            status = RunStatus(run_id=run_id)
        status.state, status.reason = RunState.FAILED, Reason.SUPERVISOR_ERROR
        status.message = f"the local supervisor could not start the run: {error}"
        status.finished_at = time.time()
        for replica in status.replicas:
            if replica.state in UNFINISHED:
                replica.state, replica.reason = ReplicaState.STOPPED, Reason.STOPPED_BY_RUN
                replica.message, replica.finished_at = "never started: the supervisor failed", status.finished_at
        store.write_status(status)
    except Exception:
        log.exception("cannot record the failure of run %s", run_id)
