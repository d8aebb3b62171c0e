"""Stalls noticed: a replica that logs steps and has logged none for a while is shown Stalled.

A hung distributed job does not crash: every rank waits in a collective for a rank that never
comes (gloo's and NCCL's timeouts are 30 minutes), and the run looks Running. The supervisor reads
each replica's metrics file as it grows (only the new bytes, every `CHECK_EVERY_S`), notes when
each new step was logged, and marks a running replica stalled once it has logged no step for
max(`STALL_AFTER_S`, 10x its median step time): `ReplicaStatus.stalled_since` (when its last step
was logged) and `stall_after_s` (the limit it passed). Stalled is not a state: the replica is still
Running, and the mark goes as soon as a step arrives. A replica that logs no steps is never judged
here. When a stall begins (no replica of the run was stalled before) every live replica's stacks
are taken, once, in a thread (`diagnostics.taking`: the supervisor's loop does not wait for them),
and kept in the run directory, where they can be read after the run has ended.
"""

from __future__ import annotations

import json
import logging
import statistics
import threading
import time
from collections import deque
from pathlib import Path

from ...diagnostics import taking
from ...runstore import RunPaths
from .config import STALL_AFTER_S
from .replica import Replica

log = logging.getLogger(__name__)

#: How often the metrics files are read for new steps.
CHECK_EVERY_S = 2.0
#: A replica's limit is this many of its median step times (when that is above the floor).
MEDIAN_STEPS = 10
#: Step intervals remembered per replica (the median is over these).
INTERVALS_KEPT = 200


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


class StallWatch:
    """The supervisor's stall check: `check(replicas)` on each turn of its loop (it reads only
    every `CHECK_EVERY_S`); returns whether a replica's status changed."""

    def __init__(self, paths: RunPaths, floor_s: float = STALL_AFTER_S):
        self.paths = paths
        self.floor_s = floor_s
        self.steps: dict[str, StepTimes] = {}
        self.next_check = 0.0
        self.taking: threading.Thread | None = None

    def check(self, replicas: list[Replica]) -> bool:
        now = time.monotonic()
        if now < self.next_check:
            return False
        self.next_check = now + CHECK_EVERY_S
        changed, began, wall = False, [], time.time()
        was_stalled = any(r.status.stalled_since is not None for r in replicas)
        for replica in replicas:
            spec, st = replica.spec, replica.status
            steps = self.steps.setdefault(replica.key, StepTimes(self.paths.metrics(spec.role, spec.index)))
            steps.read()
            limit = steps.limit(self.floor_s)
            stalled = replica.running and steps.last_time is not None and wall - steps.last_time > limit
            if stalled and st.stalled_since is None:
                st.stalled_since, st.stall_after_s = steps.last_time, limit
                began.append(
                    f"{replica.key}: no step logged for {wall - (steps.last_time or wall):.0f} s (limit {limit:.0f} s)"
                )
                changed = True
            elif not stalled and st.stalled_since is not None:
                st.stalled_since = st.stall_after_s = None
                changed = True
        for notice in began:
            log.warning("Stalled: %s", notice)
        if began and not was_stalled:
            self._take_stacks(replicas, "stalled: " + "; ".join(began))
        return changed

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
