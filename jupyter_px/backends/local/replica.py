"""One replica as the supervisor tracks it, and the typed reason it ends a replica for.

`Ending` replaces a `(reason, state, message)` tuple: when the supervisor ends a replica itself
(the run is stopping, its memory is over the limit) it says up front what to record once the
process is gone, and whether that counts as the replica failing (only OOMKilled does: it may be
restarted like any failure and it fails the run).
"""

from __future__ import annotations

import logging
import subprocess
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from ...runstore import ReplicaState, ReplicaStatus
from ...runstore.models import Reason
from ...topology import ReplicaSpec
from .process import ExitInfo

log = logging.getLogger(__name__)


class EndReason(str, Enum):
    STOPPED_BY_RUN = Reason.STOPPED_BY_RUN.value
    STOPPED_BY_USER = Reason.STOPPED_BY_USER.value
    OOM_KILLED = Reason.OOM_KILLED.value
    COLLECTIVE_TIMEOUT = Reason.COLLECTIVE_TIMEOUT.value  # its peers timed out waiting for it


@dataclass(frozen=True)
class Ending:
    """Why the supervisor ends a replica and the state to record for it."""

    reason: EndReason
    state: ReplicaState
    message: str

    @property
    def is_failure(self) -> bool:
        return self.reason is EndReason.OOM_KILLED

    @classmethod
    def by_run(cls, state: ReplicaState, message: str) -> Ending:
        return cls(EndReason.STOPPED_BY_RUN, state, message)

    @classmethod
    def by_user(cls) -> Ending:
        return cls(EndReason.STOPPED_BY_USER, ReplicaState.STOPPED, "stopped on request")

    @classmethod
    def oom(cls, message: str) -> Ending:
        return cls(EndReason.OOM_KILLED, ReplicaState.FAILED, message)


@dataclass
class ForkedProcess:
    """A replica forked from a warm template's zygote (`spawners.py`): what the supervisor needs
    of a `Popen` (it reaps it with `os.waitpid`)."""

    pid: int
    returncode: int | None = None


#: Replica states that are not final yet.
UNFINISHED = (ReplicaState.PENDING, ReplicaState.RUNNING, ReplicaState.RESTARTING)


@dataclass
class Replica:
    """One replica: its spec, its status entry and, while it runs, its process."""

    spec: ReplicaSpec
    status: ReplicaStatus
    popen: subprocess.Popen | ForkedProcess | None = None
    pgid: int | None = None
    #: Set when we end it: what to record once its process is gone.
    ending: Ending | None = None
    #: When we sent SIGTERM, and when SIGKILL follows at the latest (the stop's grace).
    term_at: float | None = None
    kill_at: float | None = None
    restart_at: float | None = None
    #: After the run succeeded: when to stop it if it has not finished by itself.
    finish_by: float | None = None
    last_exit: ExitInfo | None = None
    port: int | None = None

    @property
    def key(self) -> str:
        return self.spec.key

    @property
    def running(self) -> bool:
        return self.popen is not None

    def end_without_exit(self, ending: Ending) -> None:
        """Record `ending` for a replica that has no process to wait for (never started, or
        waiting to restart). A replica that never ran is Stopped, not Succeeded."""
        st = self.status
        st.reason, st.state, st.message = ending.reason.value, ending.state, ending.message
        if st.state == ReplicaState.SUCCEEDED and st.started_at is None:
            st.state = ReplicaState.STOPPED
        st.finished_at = st.finished_at or time.time()
        self.restart_at = None

    def mark_restart(self, log_path: Path) -> None:
        """Its log gets a `--- restart N ---` line before the next process's output (a full disk
        must not stop the restart)."""
        try:
            with open(log_path, "a", encoding="utf-8") as handle:
                handle.write(f"--- restart {self.status.restarts} ---\n")
        except OSError as error:
            log.warning("%s: cannot mark the restart in its log: %s", self.key, error)
