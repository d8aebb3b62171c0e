"""Each rank's pace and the straggler, from what tracking already records: (step, time) points.

Every `log_metrics(step=...)` call is recorded with its wall-clock time, per replica. Two things
can be read from that, without anything new in the training code:

* **Step rate**: steps per second over a replica's last `WINDOW` logged steps. Ranks that step
  on their own (parameter-server workers, independent jobs) differ here, and one much slower
  than the median rank is the straggler: "worker-3 is 1.8x slower than the median rank".
* **Arrival lag and waiting**: ranks in lockstep (DDP, Horovod, MultiWorkerMirrored) share one
  rate: the all-reduce makes every rank wait for the slowest. Where the code logs before the
  collective (a loss right after `backward()`), the fast ranks reach each step earlier than the
  slow one; `lag_s` is how much later than the median rank a replica reaches the steps they all
  logged, and `waiting` the share of each step a replica spends between reaching it and the last
  rank reaching it (what it waits in the collective). The straggler line then says who holds the
  others back and what it costs them. Where the code logs after the collective, every rank
  reaches a step at the same moment: no lag, no line, which is also the truth those numbers tell.

Nothing is said with fewer than two replicas or `MIN_POINTS` steps each, nor for differences
under `SLOWER` (rates) or `LAGGING` (a share of the step time): noise is not a straggler.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: Logged steps per replica the rates are measured over (the recent pace, not the average).
WINDOW = 50
#: Steps a replica needs before its pace is told.
MIN_POINTS = 5
#: A rank this many times slower than the median rank is named.
SLOWER = 1.2
#: A rank reaching steps later than the median by this share of a step is named.
LAGGING = 0.2


@dataclass(frozen=True)
class Pace:
    replica: str
    steps_per_s: float | None
    lag_s: float | None
    waiting: float | None


def _clock(steps: Sequence[int | None], times: Sequence[float]) -> dict[int, float]:
    """step -> the first time the replica logged it, for its last `WINDOW` distinct steps."""
    first: dict[int, float] = {}
    for step, when in zip(steps, times, strict=False):
        if step is not None and step not in first:
            first[step] = when
    kept = sorted(first)[-WINDOW:]
    return {step: first[step] for step in kept}


def _rate(clock: Mapping[int, float]) -> float | None:
    """Steps per second: the median of the intervals between logged steps, so a first step that
    waited for imports, or one checkpoint, does not set the pace."""
    if len(clock) < MIN_POINTS:
        return None
    steps = sorted(clock)
    per_step = [(clock[b] - clock[a]) / (b - a) for a, b in zip(steps, steps[1:], strict=False)]
    median = statistics.median(per_step)
    return 1 / median if median > 0 else None


def rank_paces(clocks: Mapping[str, tuple[Sequence[int | None], Sequence[float]]]) -> list[Pace]:
    """Each replica's pace from its (steps, times) (`replica -> (steps, times)`), in the given order."""
    per = {replica: _clock(steps, times) for replica, (steps, times) in clocks.items()}
    rates = {replica: _rate(clock) for replica, clock in per.items()}
    common = sorted(set.intersection(*(set(c) for c in per.values()))) if len(per) > 1 else []
    lag: dict[str, float | None] = dict.fromkeys(per)
    waiting: dict[str, float | None] = dict.fromkeys(per)
    if len(common) >= MIN_POINTS:
        lags: dict[str, list[float]] = {replica: [] for replica in per}
        waits: dict[str, list[float]] = {replica: [] for replica in per}
        previous_last: float | None = None
        for step in common:
            arrivals = {replica: per[replica][step] for replica in per}
            median = statistics.median(arrivals.values())
            last = max(arrivals.values())
            for replica, when in arrivals.items():
                lags[replica].append(when - median)
                if previous_last is not None and last > previous_last:
                    waits[replica].append((last - when) / (last - previous_last))
            previous_last = last
        for replica in per:
            lag[replica] = statistics.median(lags[replica])
            waiting[replica] = statistics.fmean(waits[replica]) if waits[replica] else None
    return [Pace(replica, rates[replica], lag[replica], waiting[replica]) for replica in per]


def straggler_line(paces: Sequence[Pace], labels: Mapping[str, str] | None = None) -> str | None:
    """One line naming the rank that holds the others back, or None when none does."""
    labels = labels or {}
    rated = [p for p in paces if p.steps_per_s]
    if len(rated) < 2:
        return None
    median_rate = statistics.median(p.steps_per_s for p in rated if p.steps_per_s)
    slowest = min(rated, key=lambda p: p.steps_per_s or 0.0)
    name = labels.get(slowest.replica, slowest.replica)
    if slowest.steps_per_s and median_rate / slowest.steps_per_s >= SLOWER:
        line = f"{name} is {median_rate / slowest.steps_per_s:.1f}x slower than the median rank"
        if slowest.waiting is not None and slowest.waiting >= 0.05:  # a rank that waits at a collective
            line += f"; {slowest.waiting:.0%} of its time waiting"
        return line
    lagged = [p for p in paces if p.lag_s is not None]
    if len(lagged) < 2:
        return None
    late = max(lagged, key=lambda p: p.lag_s or 0.0)
    step_time = 1 / median_rate if median_rate else None
    if not step_time or (late.lag_s or 0.0) < LAGGING * step_time:
        return None
    others = [p.waiting for p in lagged if p is not late and p.waiting is not None]
    name = labels.get(late.replica, late.replica)
    line = f"{name} reaches each step {late.lag_s:.2f}s after the median rank"
    if others:
        line += f"; the other ranks spend {statistics.fmean(others):.0%} of their time waiting for it"
    return line
