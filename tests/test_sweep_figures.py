"""Each tuning view's figure, built once in Python (`presentation.sweep_figures`) for the
notebook's monitor and the JupyterLab extension alike: what each draws from a view-model, and the
figures the extension's jest tests put in a theme (`labextension/src/__tests__/sweepView.json`,
which is what `sweep_view` makes of its model: checked here, so the two cannot drift apart).
"""

from __future__ import annotations

import json
from pathlib import Path

from jupyter_px.presentation.colors import OBJECTIVE_SCALE, REPLICA_COLORS
from jupyter_px.presentation.plot_theme import GREY
from jupyter_px.presentation.sweep_figures import sweep_figures, sweep_view
from jupyter_px.sweeps.view_model import NO_OBJECTIVE, SweepViewModel

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / "labextension" / "src" / "__tests__" / "sweepView.json"
THEME_TS = ROOT / "labextension" / "src" / "plotting"


def model(**changes) -> SweepViewModel:
    """Four trials over a log-scale learning rate and a categorical activation."""
    lr = {"name": "lr", "role": "param", "log": True, "values": [0.001, 0.01, 0.1, 1], "range": [0.001, 1]}
    act = {"name": "act", "role": "param", "categorical": True, "categories": ["relu", "tanh"], "values": [0, 1, 0, 1]}
    loss = {"name": "loss", "role": "objective", "values": [3, 4, 1, 2], "range": [1, 4]}
    fields = {
        "sweep_id": "sw",
        "name": "sw",
        "state": "Succeeded",
        "algorithm": "grid",
        "objectives": [{"name": "loss", "direction": "minimize"}],
        "n_trials": 4,
        "counts": {"Complete": 4},
        "best": 2,
        "complete": 4,
        "history": [
            {
                "objective": "loss",
                "direction": "minimize",
                "points": [
                    {"trial": t, "value": v, "best": b} for t, v, b in [(0, 3, 3), (1, 4, 3), (2, 1, 1), (3, 2, 1)]
                ],
            }
        ],
        "importance": [{"objective": "loss", "params": {"lr": 0.8, "act": 0.2}}],
        "parallel": {"trials": [0, 1, 2, 3], "color": "loss", "axes": [lr, act, loss]},
        "slices": [
            {
                "param": "lr",
                "objective": "loss",
                "log": True,
                "trials": [0, 1, 2, 3],
                "x": lr["values"],
                "y": [3, 4, 1, 2],
            },
            {
                "param": "act",
                "objective": "loss",
                "categorical": True,
                "categories": ["relu", "tanh"],
                "trials": [0, 1, 2, 3],
                "x": [0, 1, 0, 1],
                "y": [3, 4, 1, 2],
            },
        ],
        "contour": {
            "x_param": "lr",
            "y_param": "act",
            "objective": "loss",
            "x_log": True,
            "y_categories": ["relu", "tanh"],
            "trials": [0, 1, 2, 3],
            "x": lr["values"],
            "y": [0, 1, 0, 1],
            "z": [3, 4, 1, 2],
            "grid_x": [0.001, 1],
            "grid_y": [0, 1],
            "grid_z": [[3, 1], [4, 2]],
        },
        "pareto": None,
        "missing": {},
        "note": None,
        "metrics": [],
    }
    return SweepViewModel(**{**fields, **changes})


def test_the_history_draws_each_trial_and_the_best_so_far():
    (figure,) = sweep_figures(model()).history
    points, best = figure.data
    assert [points["name"], best["name"]] == ["loss", "best so far"]
    assert points["x"] == [0, 1, 2, 3] and points["y"] == [3, 4, 1, 2]
    assert best["y"] == [3, 3, 1, 1] and best["line"]["shape"] == "hv"
    assert figure.layout["xaxis"]["title"]["text"] == "trial"
    assert figure.layout["yaxis"]["title"]["text"] == "loss (minimize)"


def test_the_importance_is_largest_on_top():
    (figure,) = sweep_figures(model()).importance
    (bars,) = figure.data
    assert bars["y"] == ["act", "lr"] and bars["x"] == [0.2, 0.8]  # plotly draws the first at the bottom
    assert figure.layout["xaxis"]["title"]["text"] == "share of loss's variance each param alone explains (η²)"


def test_the_parallel_coordinates_have_categories_and_log_axes_in_real_units():
    (trace,) = sweep_figures(model()).parallel.data
    assert trace["type"] == "parcoords"
    lr, act, loss = trace["dimensions"]
    assert [lr["label"], act["label"], loss["label"]] == ["lr (log scale)", "act", "loss"]
    assert lr["values"] == [-3, -2, -1, 0] and lr["tickvals"] == [-3, -2, -1, 0]
    assert lr["ticktext"] == ["0.001", "0.01", "0.1", "1"]  # lr's own units, never its log10
    assert act["ticktext"] == ["relu", "tanh"]
    assert (
        trace["line"]["color"] == [3, 4, 1, 2] and trace["line"]["reversescale"] is True
    )  # lower loss: the better end


def test_the_contour_draws_its_grid_and_the_trials_on_it():
    grid, points = sweep_figures(model()).contour.data
    assert grid["type"] == "contour" and grid["z"] == [[3, 1], [4, 2]]
    assert len(points["x"]) == 4 and points["customdata"][2] == [2, 1]
    layout = sweep_figures(model()).contour.layout
    assert layout["xaxis"]["type"] == "log" and layout["xaxis"]["title"]["text"] == "lr"
    assert layout["yaxis"]["ticktext"] == ["relu", "tanh"]


def test_each_slice_has_its_own_x_axis_side_by_side():
    figure = sweep_figures(model()).slices
    assert [trace["xaxis"] for trace in figure.data] == ["x", "x2"]
    assert [len(trace["x"]) for trace in figure.data] == [4, 4]
    assert figure.layout["xaxis"]["title"]["text"] == "lr" and figure.layout["xaxis2"]["title"]["text"] == "act"
    assert figure.layout["xaxis"]["domain"][1] < figure.layout["xaxis2"]["domain"][0]
    assert figure.layout["yaxis"]["title"]["text"] == "loss"


def test_the_pareto_front_is_marked_apart_and_joined_in_order():
    objectives = [{"name": "loss", "direction": "minimize"}, {"name": "throughput", "direction": "maximize"}]
    points = [(0, [2, 9], True), (1, [3, 5], False), (2, [1, 4], True), (3, [4, 1], False)]
    pareto = {
        "objectives": objectives,
        "front": [0, 2],
        "points": [{"trial": t, "values": v, "on_front": on} for t, v, on in points],
    }
    figures = sweep_figures(model(objectives=objectives, pareto=pareto))
    others, front = figures.pareto.data
    assert others["customdata"] == [1, 3]
    assert front["name"] == "Pareto front" and front["customdata"] == [2, 0]  # by the first objective
    assert front["x"] == [1, 2] and front["y"] == [4, 9]
    assert figures.pareto.layout["xaxis"]["title"]["text"] == "loss (min)"
    assert figures.pareto.layout["yaxis"]["title"]["text"] == "throughput (max)"
    assert sweep_figures(model()).pareto is None  # one objective: no Pareto plot


def test_a_sweep_without_an_objective_draws_each_metric_a_line_per_trial():
    curves = [{"trial": 0, "steps": [0, 1], "values": [1, 1e-8]}, {"trial": 1, "steps": [0, 1], "values": [2, 0.5]}]
    figures = sweep_figures(
        model(objectives=[], history=[], importance=None, parallel=None, slices=[], contour=None, best=None,
              note=NO_OBJECTIVE, metrics=[{"name": "loss", "trials": curves}])
    )  # fmt: skip
    (loss,) = figures.metrics
    assert [trace["name"] for trace in loss.data] == ["trial 0", "trial 1"]
    assert loss.layout["yaxis"]["title"]["text"] == "loss" and loss.layout["xaxis"]["dtick"] == 1
    assert figures.history == [] and figures.parallel is None  # no view needs an objective it has not


def test_the_figures_are_in_the_neutral_look_the_extension_recolors():
    """Every color of a figure is the neutral grey, the grid, a replica color or the objective's
    scale: the ones the extension's `themeFigure` swaps for the theme's (a color of its own
    would stay as it is, in every theme)."""
    from jupyter_px.presentation.plot_theme import GRID

    known = {GREY.lower(), GRID, "rgba(0,0,0,0)"} | {c.lower() for c in REPLICA_COLORS}
    figures = sweep_figures(model())
    found: set[str] = set()

    def walk(value, key=""):
        if isinstance(value, dict):
            for k, v in value.items():
                if k != "colorscale":
                    walk(v, k)
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif key == "color" and isinstance(value, str):
            found.add(value.lower())

    for figure in [*figures.history, *figures.importance, figures.parallel, figures.contour, figures.slices]:
        walk(figure.data)
    assert found and found <= known, found - known
    (trace,) = figures.parallel.data
    assert [color for _, color in trace["line"]["colorscale"]] == list(OBJECTIVE_SCALE)
    theme = (THEME_TS / "themeFigure.ts").read_text()
    assert f"NEUTRAL_GREY = '{GREY.lower()}'" in theme  # the grey the extension looks for is this one


def test_the_extensions_fixture_is_what_the_server_sends():
    shared = json.loads(SHARED.read_text())
    view = sweep_view(SweepViewModel(**{k: v for k, v in shared.items() if k != "figures"}))
    assert shared == json.loads(json.dumps(view.model_dump(mode="json")))
