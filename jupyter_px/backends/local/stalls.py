"""The supervisor's stall check (`diagnostics.stalls`: what counts as a stall) and what it does
when one begins: every live replica's stacks are taken, once, in a thread (`diagnostics.taking`:
the supervisor's loop does not wait for them), and kept in the run directory, where they can be
read after the run has ended.
"""

from __future__ import annotations

import logging
import threading

from ...diagnostics import taking
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
        self.taking: threading.Thread | None = None

    def check(self, replicas: list[Replica]) -> bool:
        before = [r.status.stalled_since for r in replicas]
        was_stalled = self.judge.any_stalled
        began = self.judge.mark((r.status, r.running) for r in replicas)
        for notice in began:
            log.warning("Stalled: %s", notice)
        if began and not was_stalled:
            self._take_stacks(replicas, "stalled: " + "; ".join(began))
        return [r.status.stalled_since for r in replicas] != before

    def _take_stacks(self, replicas: list[Replica], why: str) -> None:
        if self.taking is not None and self.taking.is_alive():
            return
        targets = {r.key: r.popen.pid for r in replicas if r.popen is not None}
        root, run_id = self.paths.root, self.paths.run_id

        def take() -> None:
            try:
                snapshot = taking.take(root, run_id, targets, why=why)
                log.info("stacks taken (%s):\n%s", why, snapshot["text"])
            except Exception:
                log.exception("cannot take the replicas' stacks")

        self.taking = threading.Thread(target=take, name="px-stacks", daemon=True)
        self.taking.start()
