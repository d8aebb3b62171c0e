"""Stalls noticed: a replica that logs steps and has logged none for a while is shown Stalled.

A hung distributed job does not crash: every rank waits in a collective for a rank that never
comes (gloo's and NCCL's timeouts are 30 minutes), and the run looks Running. Whoever owns a run
(the local supervisor, the Slurm follower) reads each replica's metrics file as it grows (only the
new bytes), notes when each new step was logged, and marks a running replica stalled once it has
logged no step for max(the floor, `MEDIAN_STEPS` x its median step time): `ReplicaStatus.
stalled_since` (when its last step was logged) and `stall_after_s` (the limit it passed). Stalled
is not a state: the replica is still Running, and the mark goes as soon as a step arrives. A
replica that logs no steps is never judged, and neither is a restarted one (a gang restart, a
Slurm requeue) until it logs a step of its own attempt: its last step is its previous attempt's,
and its new process may well be importing torch, waiting for its node or loading a checkpoint
for longer than the floor (taking the stacks of a process that starts threads then is no
diagnosis, and not harmless: faulthandler walks the other threads' frames without the GIL).
What the owner does when a stall begins (take every replica's stacks, once) is its own: only it
knows how to reach its processes.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..env_seconds import seconds_from_env
from ..runstore import ReplicaStatus

#: How often the metrics files are read for new steps.
CHECK_EVERY_S = 2.0
#: A replica's limit is this many of its median step times (when that is above the floor).
MEDIAN_STEPS = 10
#: Step intervals remembered per replica (the median is over these).
INTERVALS_KEPT = 200
#: The floor when PX_STALL_AFTER_S does not set one.
DEFAULT_FLOOR_S = 60.0


def floor_s() -> float:
    """The shortest silence that counts as a stall: PX_STALL_AFTER_S, else `DEFAULT_FLOOR_S`."""
    return seconds_from_env("PX_STALL_AFTER_S", str(DEFAULT_FLOOR_S))


class StepTimes:
    """When each new step of one replica was logged, read from its metrics file as it grows."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self.last_step: int | None = None
        self.last_time: float | None = None
        self.intervals: deque[float] = deque(maxlen=INTERVALS_KEPT)

    def read(self) -> None:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except OSError:
            return
        complete = data[: data.rfind(b"\n") + 1]
        self.offset += len(complete)
        for line in complete.splitlines():
            try:
                record = json.loads(line)
                step, when = record.get("step"), float(record.get("time"))
            except (ValueError, TypeError, AttributeError):
                continue
            if step is None:
                continue
            if step != self.last_step:
                if self.last_time is not None and when >= self.last_time:
                    self.intervals.append(when - self.last_time)
                self.last_step = step
            self.last_time = when

    def limit(self, floor: float) -> float:
        median = statistics.median(self.intervals) if self.intervals else 0.0
        return max(floor, MEDIAN_STEPS * median)


def last_step_of_this_attempt(steps: StepTimes, status: ReplicaStatus) -> float | None:
    """When the replica's current process (this attempt: `status.started_at`, where its owner
    knows it) logged its last step; None before its first."""
    last = steps.last_time
    if last is None or (status.started_at is not None and last < status.started_at):
        return None
    return last


@dataclass(frozen=True)
class Stall:
    """A replica's stall: since its last step (time.time()), past `limit_s` of silence."""

    since: float
    limit_s: float


class StallJudge:
    """One run's stall marks. `mark(replicas)` on each turn of the owner's loop (it reads the
    metrics files only every `CHECK_EVERY_S`) sets each replica's mark from what it has read, so
    an owner that builds its statuses anew each turn (the Slurm follower) keeps them; it returns
    what began this turn ("worker-1: no step logged for 64 s (limit 60 s)")."""

    def __init__(self, metrics_path: Callable[[str, int], Path], floor: float | None = None):
        self.metrics_path = metrics_path
        self.floor = floor_s() if floor is None else floor
        self.steps: dict[str, StepTimes] = {}
        self.stalls: dict[str, Stall] = {}
        self.next_check = 0.0

    def mark(self, replicas: Iterable[tuple[ReplicaStatus, bool]]) -> list[str]:
        """`replicas`: each status with whether its process runs now. Returns the stalls that began."""
        replicas = list(replicas)
        now = time.monotonic()
        began: list[str] = []
        if now >= self.next_check:
            self.next_check = now + CHECK_EVERY_S
            began = self._judge(replicas)
        for status, _ in replicas:
            stall = self.stalls.get(status.key)
            status.stalled_since = stall.since if stall else None
            status.stall_after_s = stall.limit_s if stall else None
        return began

    @property
    def any_stalled(self) -> bool:
        return bool(self.stalls)

    def _judge(self, replicas: list[tuple[ReplicaStatus, bool]]) -> list[str]:
        began, wall = [], time.time()
        for status, running in replicas:
            steps = self.steps.get(status.key)
            if steps is None:
                steps = self.steps[status.key] = StepTimes(self.metrics_path(status.role, status.index))
            steps.read()
            limit = steps.limit(self.floor)
            last = last_step_of_this_attempt(steps, status)
            if running and last is not None and wall - last > limit:
                if status.key not in self.stalls:
                    self.stalls[status.key] = Stall(last, limit)
                    quiet = wall - last
                    began.append(f"{status.key}: no step logged for {quiet:.0f} s (limit {limit:.0f} s)")
            else:
                self.stalls.pop(status.key, None)
        return began
