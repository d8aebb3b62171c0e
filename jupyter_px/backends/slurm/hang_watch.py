"""What the Slurm follower does about a hang: marks the replicas that stopped logging steps
Stalled (`diagnostics.stalls`, read from their metrics files in the run directory the nodes
share) and takes every running replica's stacks once when a stall begins; and, when the first
failure is a collective that timed out, holds the run's decision while it reads the stacks of the
replicas still running, to name the one the others waited for (`backends/collective_blame.py`).
Stacks are taken as `jupyter px stacks` takes them (`stacks.py`), in a thread."""

from __future__ import annotations

import logging
from typing import Any

from ...diagnostics.stall_stacks import StallStacks
from ...diagnostics.stalls import StallJudge
from ...runstore import ReplicaState, ReplicaStatus, RunPaths
from ..collective_blame import CollectiveTimeouts
from .handle import JobHandle
from .stacks import take_stacks

log = logging.getLogger(__name__)


class HangWatch:
    def __init__(self, paths: RunPaths, handle: JobHandle):
        self.run_dir, self.run_id, self.handle = paths.root, paths.run_id, handle
        self.stalls = StallStacks(StallJudge(paths.metrics), self.take, self.run_id)
        self.timeouts = CollectiveTimeouts(self.take)

    def take(self, targets: dict[str, int | None], why: str) -> dict[str, Any]:
        snapshot = take_stacks(self.run_dir, self.run_id, self.handle, targets, why)
        log.info("run %s: stacks taken (%s):\n%s", self.run_id, why, snapshot["text"])
        return snapshot

    def mark_stalls(self, replicas: list[ReplicaStatus], running: bool) -> None:
        """Mark the running replicas that stopped logging steps; when a stall begins, take every
        running replica's stacks once."""
        self.stalls.mark((r, running and r.state == ReplicaState.RUNNING) for r in replicas)
