"""What the supervisor watches in its running replicas besides their exits, on each turn of its
loop: their CPU and memory (`diagnostics/system_metrics.py`) and whether they still log steps (`stalls.py`,
which takes every replica's stacks once when a stall begins). One object, so the supervisor's
loop has one call for it."""

from __future__ import annotations

from ...diagnostics.system_metrics import SystemSampler
from ...runstore import RunPaths
from .replica import Replica
from .stalls import StallWatch


class ReplicaWatch:
    def __init__(self, paths: RunPaths):
        self.system = SystemSampler(paths.metrics_dir)
        self.stalls = StallWatch(paths)

    def turn(self, replicas: list[Replica]) -> bool:
        """Sample and check what is due; whether a replica's status changed (a stall began or ended)."""
        self.system.sample({r.key: r.popen.pid if r.popen is not None else None for r in replicas})
        return self.stalls.check(replicas)
