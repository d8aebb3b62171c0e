"""Long series made short on the server, so a plot of 200 runs gets 200 short lines.

A plot is a few hundred pixels wide; 100,000 points a line is work for the network, the JSON
parser and the renderer that no pixel shows. Decimation (every k-th point) would hide spikes, the
points people look for, so the points are chosen with MinMaxLTTB (Van Der Donckt et al., 2023;
`tsdownsample`, Rust): min/max pre-selection, then Largest-Triangle-Three-Buckets, which keeps a
line's visual shape at a bounded number of points. MinMaxLTTB alone may still drop a series'
true minimum or maximum (its buckets keep the point that draws the biggest triangle, not always
the extreme), so the table beside the plot would name a best value the line never reaches. The
points a table shows are therefore always kept, at any `points`: the first and the last finite
point (the last is the one people read) and the first point at the series' minimum and at its
maximum (the best value either way, at the step the table names); MinMaxLTTB fills the rest.

Non-finite values (NaN, inf) are left out of the choice: a line through them cannot be drawn, and
each comparison's table says the final and best values over the finite points.
"""

from __future__ import annotations

import numpy as np
from tsdownsample import MinMaxLTTBDownsampler

__all__ = ["MIN_POINTS", "MAX_POINTS", "DEFAULT_POINTS", "downsample_indices", "check_points"]

#: LTTB needs at least three buckets (first, one, last).
MIN_POINTS = 10
#: The most points one series may ask for: more is never needed on a screen.
MAX_POINTS = 10_000
#: Points per series when nothing is asked: a wide plot's pixels, at about two per point.
DEFAULT_POINTS = 500

_DOWNSAMPLER = MinMaxLTTBDownsampler()


def check_points(points: object) -> int:
    """`points` as a bound per series; ValueError naming the value when it is not one."""
    if isinstance(points, bool) or not isinstance(points, int):
        raise ValueError(f"points: {points!r} is not a whole number")
    if not MIN_POINTS <= points <= MAX_POINTS:
        raise ValueError(f"points: {points} is not between {MIN_POINTS} and {MAX_POINTS}")
    return points


def downsample_indices(x: np.ndarray, y: np.ndarray, points: int) -> np.ndarray:
    """Indices (ascending) of at most `points` points of (x, y) that draw like the whole series.

    Only finite values are chosen from. `x` is used when it never goes back (steps); otherwise
    (steps repeated after a restart, points without a step) the points' positions stand in, which
    LTTB needs to be ordered.
    """
    points = check_points(points)
    finite = np.flatnonzero(np.isfinite(y))
    if len(finite) <= points:
        return finite
    xs = x[finite].astype(np.float64, copy=False)
    ys = np.ascontiguousarray(y[finite], dtype=np.float64)
    # Two places are left for the minimum and the maximum; LTTB keeps the first and the last.
    budget = points - 2
    if len(xs) > 1 and np.all(xs[1:] >= xs[:-1]):
        chosen = _DOWNSAMPLER.downsample(np.ascontiguousarray(xs), ys, n_out=budget)
    else:
        chosen = _DOWNSAMPLER.downsample(ys, n_out=budget)
    kept = np.asarray(chosen, dtype=np.intp)
    # np.argmin/argmax give the first point at the extreme, as `values.series_values` does.
    table = np.array([0, len(ys) - 1, np.argmin(ys), np.argmax(ys)], dtype=np.intp)
    return finite[np.union1d(kept, table)]
