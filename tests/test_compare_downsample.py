"""A downsampled curve keeps what the table beside it shows: each series' first and last finite
point, its global minimum and maximum (the best value either way) at any `points`; checked as
a property over random series against the raw data, and on a real comparison of runs whose
plot (the notebook's figure, the REST answer the sidebar draws) and table must agree."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from compare_support import make_run
from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_px.compare.comparison import compare_runs, encode
from jupyter_px.compare.render import figure
from jupyter_px.runstore import RunStore
from jupyter_px.service import RunService
from jupyter_px.service.digests.downsample import MAX_POINTS, MIN_POINTS, downsample_indices

specials = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308, 0.0, -0.0, 5e-324]),
)


@st.composite
def series(draw):
    """(x, y) of up to 20,000 points: a random walk, noise or a constant (drawn from a seed, so
    long series are cheap), with any floats put in at drawn places (NaN, inf, huge, ties);
    x either steps that never go back (repeats allowed) or any order (a restart's steps)."""
    n = draw(st.integers(1, 20_000))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    shape = draw(st.sampled_from(["walk", "noise", "constant", "steps"]))
    if shape == "walk":
        y = rng.normal(size=n).cumsum()
    elif shape == "noise":
        y = rng.normal(scale=draw(st.sampled_from([1e-9, 1.0, 1e9])), size=n)
    elif shape == "constant":
        y = np.full(n, draw(st.floats(-1e6, 1e6)))
    else:
        y = rng.integers(0, 3, size=n).astype(float)  # many ties at the extremes
    for position, value in draw(st.lists(st.tuples(st.integers(0, n - 1), specials), max_size=20)):
        y[position] = value
    if draw(st.booleans()):
        x = np.cumsum(rng.integers(0, 3, size=n)).astype(float)
    else:
        x = rng.integers(0, 10_000, size=n).astype(float)
    return x, y


@settings(max_examples=300, deadline=None)
@given(series(), st.integers(MIN_POINTS, 60) | st.integers(MIN_POINTS, MAX_POINTS))
def test_every_downsampled_curve_keeps_the_ends_and_the_extremes(xy, points):
    x, y = xy
    chosen = downsample_indices(x, y, points)
    assert len(chosen) <= points
    assert np.all(np.diff(chosen) > 0)
    finite = [i for i, v in enumerate(y.tolist()) if math.isfinite(v)]
    assert all(math.isfinite(y[i]) for i in chosen)
    if not finite:
        assert len(chosen) == 0
        return
    kept = set(chosen.tolist())
    raw = [y[i] for i in finite]
    low, high = min(raw), max(raw)
    # The first and the last finite points, and the first point at the minimum and the maximum
    # (the step a table names for the best value).
    assert {finite[0], finite[-1]} <= kept
    assert next(i for i in finite if y[i] == low) in kept
    assert next(i for i in finite if y[i] == high) in kept
    assert y[chosen].min() == low and y[chosen].max() == high


STEPS = 10_000


def noisy(seed: int, n: int, scale: float):
    walk = np.random.default_rng(seed).normal(scale=scale, size=n).cumsum()
    return lambda k: float(walk[k])


@pytest.fixture(scope="module")
def forty_runs(tmp_path_factory) -> tuple[RunStore, list[str]]:
    """40 finished runs of noisy curves (the shape that lost its extremes): acc (max) and loss (min)."""
    store = RunStore(tmp_path_factory.mktemp("compare") / "home")
    ids = []
    for index in range(40):
        run_id = f"cmp-{index:04d}"
        curves = {"acc": noisy(index, STEPS, 0.002), "loss": noisy(1000 + index, STEPS, 0.01)}
        make_run(store, run_id, curves=curves, steps=STEPS, params={"seed": index})
        ids.append(run_id)
    return store, ids


@pytest.mark.parametrize("points", [MIN_POINTS, 37, 500])
def test_plot_and_table_agree_on_a_real_comparison(forty_runs, points):
    """Every drawn line's first and last points are the table's first and final, and its
    lowest and highest points the table's best either way, at the step the table names; in the
    notebook's figure and in the REST answer the sidebar draws alike."""
    store, ids = forty_runs
    comparison = compare_runs(RunService(store), ids, points=points)
    rows = {row["run_id"]: row for row in comparison.rows()}
    answer = json.loads(encode(comparison.to_json(arrays=False), comparison))
    drawn_json = {(m["name"], c["run_id"]): (c["steps"], c["values"]) for m in answer["metrics"] for c in m["curves"]}
    traces = figure(comparison).data
    drawn_figure = {}
    for trace in traces:
        run_id = trace.meta["run_id"]
        metric = comparison.metrics[0 if trace.yaxis in ("y", None) else 1].name
        drawn_figure[(metric, run_id)] = (list(trace.x), list(trace.y))
    assert len(drawn_figure) == len(drawn_json) == 80
    for (metric, run_id), (steps, values) in [*drawn_figure.items(), *drawn_json.items()]:
        direction = comparison.metric(metric).optimization
        curve = comparison.metric(metric).curves[run_id]
        best, best_step = rows[run_id]["best"][metric], rows[run_id]["best_step"][metric]
        other = curve.summary.high if direction == "min" else curve.summary.low
        assert len(values) <= points
        assert values[-1] == rows[run_id]["final"][metric] and steps[-1] == STEPS - 1
        assert steps[0] == 0
        assert (max if direction == "max" else min)(values) == best
        assert values[steps.index(best_step)] == best
        assert (min if direction == "max" else max)(values) == other
