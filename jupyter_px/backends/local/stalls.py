"""The supervisor's stall check (`diagnostics.stalls`: what counts as a stall) and what it does
when one begins: every live replica's stacks are taken, once, in a thread (`diagnostics.taking`:
the supervisor's loop does not wait for them), and kept in the run directory, where they can be
read after the run has ended.
"""

from __future__ import annotations

import logging
from typing import Any

from ...diagnostics import taking
from ...diagnostics.stall_stacks import StallStacks
from ...diagnostics.stalls import StallJudge
from ...runstore import RunPaths
from .config import STALL_AFTER_S
from .replica import Replica

log = logging.getLogger(__name__)


class StallWatch:
    """`check(replicas)` on each turn of the supervisor's loop; returns whether a replica's
    status changed (its stall mark came or went)."""

    def __init__(self, paths: RunPaths, floor_s: float = STALL_AFTER_S):
        self.paths = paths
        self.judge = StallJudge(paths.metrics, floor_s)
        self.stacks = StallStacks(self.judge, self._take, paths.run_id)

    def check(self, replicas: list[Replica]) -> bool:
        before = [r.status.stalled_since for r in replicas]
        targets = {r.key: r.popen.pid for r in replicas if r.popen is not None}
        self.stacks.mark(((r.status, r.running) for r in replicas), targets)
        return [r.status.stalled_since for r in replicas] != before

    def _take(self, targets: dict[str, int | None], why: str) -> dict[str, Any]:
        snapshot = taking.take(self.paths.root, self.paths.run_id, targets, why=why)
        log.info("stacks taken (%s):\n%s", why, snapshot["text"])
        return snapshot
