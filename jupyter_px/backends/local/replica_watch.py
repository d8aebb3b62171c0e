"""What the supervisor watches in its running replicas besides their exits, on each turn of its
loop: their CPU and memory (`system_metrics.py`) and whether they still log steps (`stalls.py`,
which takes every replica's stacks once when a stall begins). One object, so the supervisor's
loop has one call for it."""

from __future__ import annotations

from ...runstore import RunPaths
from .replica import Replica
from .stalls import StallWatch
from .system_metrics import SystemSampler


class ReplicaWatch:
    def __init__(self, paths: RunPaths):
        self.system = SystemSampler(paths)
        self.stalls = StallWatch(paths)

    def turn(self, replicas: list[Replica]) -> bool:
        """Sample and check what is due; whether a replica's status changed (a stall began or ended)."""
        self.system.sample(replicas)
        return self.stalls.check(replicas)
