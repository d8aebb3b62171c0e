"""The ipywidgets sweep monitor's tuning views (front-ends without the JupyterLab extension), from
the sweep's view-model: sweeps asked and told through the sweep's own Optuna engine, stored as
the controller stores them, and the monitor's figure widgets checked for what they draw (each
trace's points, axis titles, the Pareto front's points), and for the model's reason where a view
is missing (its plot hidden, never an empty box).
"""

from __future__ import annotations

import math

import pytest
import yaml
from plot_config_support import assert_private

from jupyter_px.runstore.models import CodeSpec
from jupyter_px.runstore.sweeps import SweepRecord, SweepState, SweepStatus, SweepStore
from jupyter_px.sweeps.engine import open_study
from jupyter_px.sweeps.snapshot import snapshot
from jupyter_px.sweeps.space import suggest
from jupyter_px.sweeps.spec import parse_polyaxonfile, read_sweep
from jupyter_px.widgets.sweep_monitor import plotted

SINGLE = """
hptuning:
  seed: 3
  random_search: {n_experiments: 8}
  metric: {name: loss, optimization: minimize}
  matrix:
    lr: {loguniform: [-7, -1]}
    act: {values: [relu, tanh, gelu]}
"""

TWO = """
hptuning:
  seed: 5
  random_search: {n_experiments: 8}
  metrics:
    - {name: loss, optimization: minimize}
    - {name: throughput, optimization: maximize}
  matrix:
    x: {uniform: [0, 1]}
    y: {uniform: [0, 1]}
"""


def stored_sweep(px_home, text: str, objective, n: int) -> tuple[str, list]:
    """A finished sweep of `n` trials, each told `objective(params)`, in the store."""
    topology = yaml.safe_load(text)
    spec = read_sweep(parse_polyaxonfile(topology))
    store = SweepStore(px_home)
    sweep_id = store.new_id("views")
    (px_home / "journals").mkdir(parents=True, exist_ok=True)
    study = open_study(spec, px_home / "journals" / f"{sweep_id}.journal")
    told = []
    for _ in range(n):
        trial = study.ask()
        values = suggest(trial, spec)
        trial.set_user_attr("params", values)
        result = objective(values)
        study.tell(trial, result)
        told.append((trial.number, values, result))
    status = snapshot(study, spec, SweepStatus(sweep_id=sweep_id, n_trials=n))
    status.state = SweepState.SUCCEEDED
    record = SweepRecord(sweep_id=sweep_id, name="views", topology=topology, code=CodeSpec(), workdir=".")
    store.create(record, {"main.py": "pass\n"}, status)
    return sweep_id, told


def loss(v: dict) -> float:
    return (math.log(v["lr"]) + 4) ** 2 + {"relu": 0.0, "tanh": 0.3, "gelu": 0.1}[v["act"]]


def monitor_of(sweep_id: str):
    from jupyter_px.sweeps.api import Sweep
    from jupyter_px.widgets.sweep_monitor import SweepMonitor

    return SweepMonitor(Sweep(sweep_id), autostart=False)


def shown(monitor, name: str) -> bool:
    return monitor.view_sections[name].layout.display != "none" and monitor.view_boxes[name].layout.display != "none"


def test_a_sweeps_views_draw_its_trials(px_home):
    sweep_id, told = stored_sweep(px_home, SINGLE, loss, 8)
    monitor = monitor_of(sweep_id)
    plots = monitor.view_plots
    values = [result for _, _, result in told]
    for plot in [monitor.objective_plot, *(p for p in plots.values() if plotted(p))]:  # what the browser gets
        assert_private(plotted(plot)["config"])  # no cloud link

    # History: each trial's loss, and the best so far.
    points, best = plotted(plots["history"])["data"]
    assert points["x"] == [number for number, _, _ in told] and points["y"] == values
    assert best["y"] == [min(values[: i + 1]) for i in range(len(values))]
    assert best["line"]["shape"] == "hv"
    layout = plotted(plots["history"])["layout"]
    assert layout["xaxis"]["title"]["text"] == "trial" and layout["yaxis"]["title"]["text"] == "loss (minimize)"

    # Importance: a bar per parameter, each its share of the loss's variance (the comparison's numbers).
    (bars,) = plotted(plots["importance"])["data"]
    assert sorted(bars["y"]) == ["act", "lr"] and all(0 <= x <= 1 for x in bars["x"])
    assert bars["y"][-1] == "lr"  # the learning rate matters most: on top

    # Parallel coordinates: lr on a log axis labelled in its own units, the activation by category,
    # the loss; 8 lines.
    (lines,) = plotted(plots["parallel"])["data"]
    labels = [d["label"] for d in lines["dimensions"]]
    assert sorted(labels) == ["act", "loss", "lr (log scale)"]
    lr = next(d for d in lines["dimensions"] if d["label"] == "lr (log scale)")
    assert lr["values"] == [math.log10(v["lr"]) for _, v, _ in told]
    assert [float(text) for text in lr["ticktext"]] == pytest.approx([10**t for t in lr["tickvals"]], rel=1e-2)
    assert all(float(text) > 0 for text in lr["ticktext"])  # real learning rates, not their log10
    assert all(len(d["values"]) == 8 for d in lines["dimensions"]) and lines["line"]["color"] == values

    # Contour: lr (numeric first) against the activation, the interpolated grid and the 8 trials;
    # a row per activation, each interpolated from its own trials only (nothing between relu and tanh).
    grid, trials = plotted(plots["contour"])["data"]
    assert len(grid["z"]) == 3 and len(grid["z"][0]) == 24 and len(trials["x"]) == 8
    for row, act in zip(grid["z"], ["gelu", "relu", "tanh"], strict=True):
        own = [value for (_, v, value) in told if v["act"] == act]
        if own:
            assert min(own) - 1e-9 <= min(row) and max(row) <= max(own) + 1e-9, act
    layout = plotted(plots["contour"])["layout"]
    assert layout["xaxis"]["title"]["text"] == "lr" and layout["xaxis"]["type"] == "log"
    assert layout["yaxis"]["title"]["text"] == "act" and list(layout["yaxis"]["ticktext"]) == ["gelu", "relu", "tanh"]

    # Slices: a panel per parameter, each trial's value.
    slices = plotted(plots["slices"])["data"]
    assert sorted(trace["name"] for trace in slices) == ["act", "lr"]
    assert all(len(trace["x"]) == 8 and trace["y"] == values for trace in slices)

    for name in ("history", "importance", "parallel", "contour", "slices"):
        assert shown(monitor, name) and monitor.view_reasons[name].value == "", name
    assert monitor.view_sections["pareto"].layout.display == "none"  # one objective: no Pareto plot


def test_a_missing_view_shows_the_models_reason(px_home):
    sweep_id, _ = stored_sweep(px_home, SINGLE, loss, 2)
    monitor = monitor_of(sweep_id)
    for name in ("importance", "contour"):
        assert not shown(monitor, name), name
        assert monitor.last_view.missing[name] in monitor.view_reasons[name].value
    assert "parameter importance needs 3 complete trials" in monitor.view_reasons["importance"].value
    assert "a contour needs three complete trials and two parameters" in monitor.view_reasons["contour"].value
    assert shown(monitor, "history") and len(plotted(monitor.view_plots["history"])["data"][0]["x"]) == 2


def test_a_two_objective_sweeps_pareto_plot_marks_its_front(px_home):
    def objectives(v: dict) -> tuple[float, float]:
        return (v["x"] ** 2 + v["y"], 10 * v["x"] - v["y"])

    sweep_id, told = stored_sweep(px_home, TWO, objectives, 8)
    monitor = monitor_of(sweep_id)
    points = {number: result for number, _, result in told}

    def dominated(p):
        return any(q[0] <= p[0] and q[1] >= p[1] and q != p for q in points.values())

    front = {number for number, p in points.items() if not dominated(p)}
    assert 1 <= len(front) < 8
    others, marked = plotted(monitor.view_plots["pareto"])["data"]
    assert marked["name"] == "Pareto front" and set(marked["customdata"]) == front
    assert set(others["customdata"]) == set(points) - front
    assert [(x, y) for x, y in zip(marked["x"], marked["y"], strict=True)] == sorted(points[n] for n in front)
    layout = plotted(monitor.view_plots["pareto"])["layout"]
    assert layout["xaxis"]["title"]["text"] == "loss (min)"
    assert layout["yaxis"]["title"]["text"] == "throughput (max)"
    assert shown(monitor, "pareto")
    history = [plotted(monitor.view_plots["history"], i) for i in range(3)]
    assert [len(figure["data"]) for figure in history[:2]] == [2, 2] and history[2] is None  # a figure per objective
    assert [figure["layout"]["yaxis"]["title"]["text"] for figure in history[:2]] == [
        "loss (minimize)",
        "throughput (maximize)",
    ]


def test_a_trial_that_succeeded_reads_succeeded_as_its_run_does():
    """One word per state everywhere: the sweep's table and counts say Succeeded (as the runs list
    says of the trial's run), not Optuna's "Complete", which stays the data's word."""
    from jupyter_px.runstore.sweeps import SweepStatus, TrialRow, TrialState
    from jupyter_px.sweeps.view import counts_text, trial_rows
    from jupyter_px.widgets.sweep_monitor import trials_table_html

    status = SweepStatus(
        sweep_id="s",
        n_trials=2,
        trials=[
            TrialRow(number=0, state=TrialState.COMPLETE, value=0.5),
            TrialRow(number=1, state=TrialState.PRUNED, value=0.9),
        ],
    )
    assert [row[1] for row in trial_rows(status)] == ["Succeeded", "Pruned"]
    assert counts_text(status) == "2/2 done, 1 succeeded, 1 pruned"
    assert "Complete" not in trials_table_html(status) and status.counts() == {"Complete": 1, "Pruned": 1}


def _luminance(hex_color: str) -> float:
    channels = [int(hex_color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(color: str, ground: str) -> float:
    high, low = sorted((_luminance(color), _luminance(ground)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _drawn_color(line: dict, value: float) -> str:
    """The color plotly draws `value` in: its place between the color values' ends on the
    colorscale (reversed where `reversescale`), interpolated in RGB between the two stops."""
    low, high = min(line["color"]), max(line["color"])
    t = (value - low) / (high - low)
    scale = [(float(at), str(color)) for at, color in line["colorscale"]]
    if line.get("reversescale"):
        scale = [(1 - at, color) for at, color in reversed(scale)]
    for (a, left), (b, right) in zip(scale, scale[1:], strict=False):
        if a <= t <= b:
            f = 0 if b == a else (t - a) / (b - a)
            rgb = [round(int(left[i : i + 2], 16) * (1 - f) + int(right[i : i + 2], 16) * f) for i in (1, 3, 5)]
            return "#" + "".join(f"{c:02x}" for c in rgb)
    raise AssertionError((t, scale))


def test_the_worst_and_the_best_trials_lines_read_in_light_and_dark(px_home):
    """Parallel coordinates color each trial's line by its objective: the worst trial's line was
    Viridis's near-black purple (1.2:1 on Dark's ground, nearly invisible) and the best one's its
    pale yellow (1.3:1 on Light's). Every trial's line, worst and best included, reads on both."""
    sweep_id, told = stored_sweep(px_home, SINGLE, loss, 8)
    (lines,) = plotted(monitor_of(sweep_id).view_plots["parallel"])["data"]
    line = lines["line"]
    values = [result for _, _, result in told]
    worst, best = max(values), min(values)  # loss: minimize
    assert line["reversescale"] is True
    for value in values:
        color = _drawn_color(line, value)
        for ground in ("#FFFFFF", "#111111"):  # JupyterLab Light's and Dark's backgrounds
            assert _contrast(color, ground) >= 3.0, (value, color, ground, value in (worst, best))
    # the scale still tells the two ends apart
    assert _drawn_color(line, worst) != _drawn_color(line, best)
