"""Metric series as plots draw them, shared by the plotly plots (`widgets/plots.py`) and the
monitor's inline SVG (`presentation/monitor.py`): one palette, one decimation. Here, below the
widgets, so that presentation never imports a widget module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from .colors import REPLICA_COLORS

if TYPE_CHECKING:
    from ..runstore.series import Series

#: What `MetricsReader.data` holds: replica -> metric -> Series.
MetricData = Mapping[str, Mapping[str, "Series"]]

#: Points per trace sent to the browser.
MAX_POINTS = 2000

#: One color per replica, the same in every plot of every surface (`colors.REPLICA_COLORS`).
PALETTE = REPLICA_COLORS


def xy(series: Series, max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of a `runstore.series.Series`: x is the step, or the point's position where a point has
    no step; decimated to `max_points` (keeping the last point, the one people look at)."""
    values = np.asarray(series.values, dtype=float)
    steps = series.steps
    if steps and None not in steps:
        x = np.asarray(steps, dtype=float)
    else:
        x = np.arange(len(values), dtype=float)
    n = len(values)
    if n > max_points:
        stride = -(-n // max_points)
        keep = np.arange(0, n, stride)
        if keep[-1] != n - 1:
            keep = np.append(keep, n - 1)
        x, values = x[keep], values[keep]
    return x, values
