"""Final and best values of a metric, and which way is best.

"Best" needs a direction: a loss is best when lowest, an accuracy when highest. Where the caller
does not say (`{"acc": "max"}`), the metric's name decides: a word of `HIGHER_IS_BETTER` in it
(`val_acc`, `f1`, `reward`) means max, anything else min (losses and errors, the common case).
Every surface shows the direction it used, so a wrong guess is visible and can be overridden.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = [
    "Optimization",
    "HIGHER_IS_BETTER",
    "optimization_for",
    "check_optimizations",
    "SeriesValues",
    "series_values",
]

Optimization = Literal["min", "max"]

#: Words in a metric's name that mean higher is better.
HIGHER_IS_BETTER = (
    "acc", "accuracy", "auc", "auroc", "f1", "precision", "recall", "score", "reward", "return",
    "iou", "map", "bleu", "rouge", "psnr", "ssim", "r2", "throughput", "dice",
)  # fmt: skip


def optimization_for(metric: str, given: Mapping[str, str] | None = None) -> Optimization:
    """The direction `given` names for `metric`, else the one its name suggests."""
    if given and metric in given:
        return "max" if given[metric] == "max" else "min"
    words = [word for word in re.split(r"[^a-z0-9]+", metric.lower()) if word]
    return "max" if any(word in HIGHER_IS_BETTER for word in words) else "min"


def check_optimizations(given: object) -> dict[str, Optimization]:
    """{metric: "min" | "max"}; ValueError naming the metric and the value for anything else."""
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise ValueError(f"optimization: {given!r} is not an object of metric -> 'min' or 'max'")
    out: dict[str, Optimization] = {}
    for metric, direction in given.items():
        if direction not in ("min", "max"):
            raise ValueError(f"optimization.{metric}: {direction!r} is not 'min' or 'max'")
        out[str(metric)] = direction
    return out


@dataclass(frozen=True)
class SeriesValues:
    """The values a table shows for one series (finite points only; None when there are none)."""

    final: float | None
    final_step: float | None
    low: float | None
    low_step: float | None
    high: float | None
    high_step: float | None

    def best(self, optimization: Optimization) -> tuple[float | None, float | None]:
        """(value, step) of the best point in the direction named."""
        return (self.low, self.low_step) if optimization == "min" else (self.high, self.high_step)


def series_values(x: np.ndarray, y: np.ndarray) -> SeriesValues:
    finite = np.flatnonzero(np.isfinite(y))
    if not len(finite):
        return SeriesValues(None, None, None, None, None, None)
    last = finite[-1]
    ys = y[finite]
    low, high = finite[int(np.argmin(ys))], finite[int(np.argmax(ys))]
    return SeriesValues(float(y[last]), float(x[last]), float(y[low]), float(x[low]), float(y[high]), float(x[high]))
