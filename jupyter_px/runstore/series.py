"""One metric of one replica as three parallel columns: what the readers fill and plots want.

Kept apart from the reader (`metrics.py`) because every consumer of points uses it (comparison
digests, cursors, plots) while only some of them read files.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["Series", "floats"]


def floats(values: Iterable[float] = ()) -> array:
    """`values` as an `array('d')` (itself when it is one already)."""
    return values if isinstance(values, array) and values.typecode == "d" else array("d", values)


@dataclass
class Series:
    """Points of one metric of one replica, as three parallel columns (what plotting wants).

    `steps` is a list that holds None where `log_metrics` was called without a step; `values`
    and `times` are `array('d')` (8 bytes a point; index, slice, iterate and `numpy.asarray`
    them like lists; `list(series.values)` for JSON). Lists given to the constructor are
    converted.
    """

    steps: list[int | None] = field(default_factory=list)
    values: array = field(default_factory=floats)
    times: array = field(default_factory=floats)

    def __post_init__(self) -> None:
        self.values = floats(self.values)
        self.times = floats(self.times)

    def __len__(self) -> int:
        return len(self.values)

    def append(self, step: int | None, value: float, time_: float) -> None:
        self.steps.append(step)
        self.values.append(value)
        self.times.append(time_)

    def tail(self, start: int) -> Series:
        """The points from index `start` on, as a new Series (slices: C speed)."""
        return Series(self.steps[start:], self.values[start:], self.times[start:])
