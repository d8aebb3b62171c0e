"""The contour's grid: where its points are along each axis and the objective interpolated at them
(the sweep view's contour of two parameters, `view_model.py`). Plain numbers in and out: the
view-model decides which trials and which axes."""

from __future__ import annotations

import math
from typing import Any

Number = float | int


def grid_axis(values: list[Number], log: bool, points: int) -> list[float]:
    """`points` positions from the least to the greatest value, evenly spaced as the axis is
    drawn (in log10 where it is log)."""
    low, high = float(min(values)), float(max(values))
    if log:
        low, high = math.log10(low), math.log10(high)
    positions = [low + (high - low) * i / (points - 1) for i in range(points)]
    return [10**p for p in positions] if log else positions


def interpolate(
    x: list[Number],
    y: list[Number],
    z: list[float],
    grid_x: list[float],
    grid_y: list[float],
    x_log: bool,
    y_log: bool,
    x_categorical: bool = False,
    y_categorical: bool = False,
) -> list[list[float]]:
    """Inverse-distance-weighted z at each grid point, distances on the axes as drawn (scaled
    to [0, 1], log where the axis is); a trial's own point gets its own value. Along a
    categorical axis nothing is interpolated: a grid point weighs only the trials of its own
    category (no value lies between `relu` and `tanh`)."""
    import numpy as np

    def scaled(values: list[float], log: bool, low: float, high: float) -> Any:
        array = np.log10(np.asarray(values, dtype=float)) if log else np.asarray(values, dtype=float)
        return (array - low) / ((high - low) or 1.0)

    def bounds(values: list[float], log: bool) -> tuple[float, float]:
        array = np.log10(np.asarray(values, dtype=float)) if log else np.asarray(values, dtype=float)
        return float(array.min()), float(array.max())

    bx, by = bounds([float(v) for v in x], x_log), bounds([float(v) for v in y], y_log)
    px, py = scaled([float(v) for v in x], x_log, *bx), scaled([float(v) for v in y], y_log, *by)
    gx, gy = scaled(grid_x, x_log, *bx), scaled(grid_y, y_log, *by)
    values = np.asarray(z, dtype=float)
    distance = np.hypot(gx[None, :, None] - px[None, None, :], gy[:, None, None] - py[None, None, :])
    weights = 1.0 / np.maximum(distance, 1e-12) ** 2
    same = np.ones_like(weights, dtype=bool)
    if x_categorical:
        same &= np.asarray(grid_x)[None, :, None] == np.asarray(x, dtype=float)[None, None, :]
    if y_categorical:
        same &= np.asarray(grid_y)[:, None, None] == np.asarray(y, dtype=float)[None, None, :]
    has = same.any(axis=2, keepdims=True)  # a cell of two categories no trial tried: every trial
    weights = np.where(same | ~has, weights, 0.0)
    grid = (weights * values).sum(axis=2) / weights.sum(axis=2)
    return [[float(v) for v in row] for row in grid]
