"""What every run's owner does about a stall on each turn of its loop: mark the replicas that
stopped logging steps (`stalls.StallJudge`), and when a stall begins, take every running
replica's stacks once, in a thread (the owner's loop does not wait for them), kept in the run
directory where they can be read after the run has ended.

The owners are the local supervisor, the Slurm follower and the Kubernetes follower; how the
stacks are taken is each backend's own (`take`: signals locally, `scancel --signal` on Slurm, an
exec in each pod on Kubernetes).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..runstore import ReplicaStatus
from .stalls import StallJudge

log = logging.getLogger(__name__)

#: Takes the stacks of the targets (replica key -> pid) for the reason given; the snapshot.
Take = Callable[[dict[str, int | None], str], dict[str, Any]]


class StallStacks:
    """A run's stall marks (`judge`) and the stacks taken when a stall begins (`taking`)."""

    def __init__(self, judge: StallJudge, take: Take, run: str):
        self.judge, self.take, self.run = judge, take, run
        self.taking: threading.Thread | None = None

    def mark(
        self, replicas: Iterable[tuple[ReplicaStatus, bool]], targets: Mapping[str, int | None] | None = None
    ) -> list[str]:
        """Mark each replica (its status, whether its process runs now); when the run's first
        stall begins, take the stacks of `targets` (replica key -> pid; by default the running
        replicas, with the pids their statuses hold) once. The stalls that began this turn."""
        replicas = list(replicas)
        if targets is None:
            targets = {status.key: status.pid for status, running in replicas if running}
        was_stalled = self.judge.any_stalled
        began = self.judge.mark(replicas)
        for notice in began:
            log.warning("run %s stalled: %s", self.run, notice)
        if began and not was_stalled and not (self.taking is not None and self.taking.is_alive()):
            why = "stalled: " + "; ".join(began)
            self.taking = threading.Thread(
                target=self._take_quietly, args=(dict(targets), why), name="px-stall-stacks", daemon=True
            )
            self.taking.start()
        return began

    def _take_quietly(self, targets: dict[str, int | None], why: str) -> None:
        try:
            self.take(targets, why)
        except Exception:
            log.exception("run %s: cannot take the replicas' stacks", self.run)
