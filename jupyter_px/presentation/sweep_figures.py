"""What a tuner looks at, as plotly figures for the notebook's ipywidgets sweep monitor (front-ends
without the JupyterLab extension): drawn from the sweep's view-model (`sweeps.view_model`), the
same model, the same views and the same choices as the extension's `plotting/sweepFigures.ts`:

* history: each complete trial's objective (points) and the best so far (a step line), a
  panel per objective;
* importance: each parameter's eta squared (the comparison's calculation), largest on top, a panel per objective;
* parallel coordinates: an axis per parameter (categories as ticks, a log one at log10 with ticks in real units) and
  objective, a line per trial colored by the first objective, the better end for the better;
* contour: the objective interpolated over the two most important parameters, the trials on it;
* slices: each parameter against the objective, side by side;
* Pareto: the first two objectives, every trial, the front marked and joined.

Each function returns None where the model has nothing to draw; the model's `missing` says why.
Colors read in Light and Dark alike (`plot_theme.THEME_NEUTRAL`): a kernel cannot ask the page.
"""

from __future__ import annotations

import math
from typing import Any

from ..sweeps.importance import importance_label
from ..sweeps.view_model import (
    Contour,
    History,
    Importance,
    ObjectiveView,
    ParallelCoordinates,
    ParetoFront,
    Slice,
    SweepViewModel,
    ViewName,
)
from .colors import objective_colorscale
from .plot_theme import AXIS, GREY, THEME_NEUTRAL
from .series import PALETTE

#: The trials' points, and the best-so-far line (and the Pareto front).
POINTS, BEST, FRONT = PALETTE[0], PALETTE[1], PALETTE[2]


def _layout(height: int, **more: Any) -> dict[str, Any]:
    return {
        **{key: value for key, value in THEME_NEUTRAL.items() if key not in ("xaxis", "yaxis")},
        "height": height,
        "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
        **more,
    }


def _param_axis(title: str, categories: list[str] | None, log: bool) -> dict[str, Any]:
    axis: dict[str, Any] = {**AXIS, "title": {"text": title}, "type": "log" if log else "linear"}
    if categories:
        axis.update(tickmode="array", tickvals=list(range(len(categories))), ticktext=categories)
    return axis


def history_figure(histories: list[History]) -> Any:
    """A panel per objective: each trial's value, and the best so far as a step line."""
    from plotly.subplots import make_subplots

    shown = [h for h in histories if h.points]
    if not shown:
        return None
    figure = make_subplots(rows=len(shown), cols=1, shared_xaxes=True, vertical_spacing=0.12)
    for row, history in enumerate(shown, start=1):
        trials = [p.trial for p in history.points]
        figure.add_scatter(
            x=trials,
            y=[p.value for p in history.points],
            mode="markers",
            name=history.objective,
            marker={"size": 7, "color": POINTS},
            row=row,
            col=1,
        )
        figure.add_scatter(
            x=trials,
            y=[p.best for p in history.points],
            mode="lines",
            name=f"best {history.objective} so far",
            line={"color": BEST, "width": 2, "shape": "hv"},
            row=row,
            col=1,
        )
        figure.update_yaxes(AXIS, title_text=f"{history.objective} ({history.direction})", row=row, col=1)
        figure.update_xaxes(AXIS, row=row, col=1)
    figure.update_xaxes(title_text="trial", row=len(shown), col=1)
    figure.update_layout(**_layout(240 * len(shown) + 60, title="Optimization history"))
    return figure


def importance_figure(importances: list[Importance] | None) -> Any:
    """A panel per objective: a bar per parameter, largest on top."""
    from plotly.subplots import make_subplots

    if not importances:
        return None
    figure = make_subplots(rows=1, cols=len(importances), horizontal_spacing=0.15)
    for col, importance in enumerate(importances, start=1):
        names = list(importance.params)
        figure.add_bar(
            x=[importance.params[name] for name in reversed(names)],
            y=list(reversed(names)),  # plotly draws the first category at the bottom
            orientation="h",
            name=importance.objective,
            marker={"color": POINTS},
            row=1,
            col=col,
        )
        figure.update_xaxes(AXIS, range=[0, 1], title_text=importance_label(importance.objective), col=col)
        figure.update_yaxes(AXIS, col=col)
    figure.update_layout(
        **_layout(max(160, 36 * len(importances[0].params) + 90), title="Parameter importance", showlegend=False)
    )
    return figure


def log_ticks(positions: list[float]) -> tuple[list[float], list[str]]:
    """Ticks of an axis drawn at log10 of its values, labelled in the values' own units (0.001,
    not -3): a tick per decade within the range, or its ends and middle when it spans less."""
    low, high = min(positions), max(positions)
    decades = list(range(math.ceil(low), math.floor(high) + 1))
    ticks = [float(t) for t in decades] if len(decades) >= 2 else [low, (low + high) / 2, high]
    return ticks, [f"{10**t:.3g}" for t in ticks]


def parallel_figure(parallel: ParallelCoordinates | None, objectives: list[ObjectiveView]) -> Any:
    import plotly.graph_objects as go

    if parallel is None:
        return None
    dimensions = []
    for axis in parallel.axes:
        if axis.categorical and axis.categories:
            dimensions.append(
                {
                    "label": axis.name,
                    "values": axis.values,
                    "tickvals": list(range(len(axis.categories))),
                    "ticktext": axis.categories,
                    "range": [0, max(len(axis.categories) - 1, 1)],
                }
            )
        elif axis.log:
            positions = [math.log10(v) for v in axis.values]
            tickvals, ticktext = log_ticks(positions)
            dimensions.append(
                {"label": f"{axis.name} (log scale)", "values": positions, "tickvals": tickvals, "ticktext": ticktext}
            )
        else:
            dimensions.append({"label": axis.name, "values": axis.values})
    color = next(a.values for a in parallel.axes if a.role == "objective" and a.name == parallel.color)
    direction = next((o.direction for o in objectives if o.name == parallel.color), "minimize")
    figure = go.Figure(
        go.Parcoords(
            line={
                "color": color,
                "colorscale": objective_colorscale(),
                "showscale": True,
                "reversescale": direction != "maximize",
                "colorbar": {"title": {"text": parallel.color}, "thickness": 12},
            },
            dimensions=dimensions,
            # plotly's default halo behind axis text is white on a transparent paper: a blur on Dark
            tickfont={"shadow": "none"},
            labelfont={"shadow": "none"},
            rangefont={"shadow": "none"},
        )
    )
    figure.update_layout(
        **_layout(
            340,
            title={"text": "Parallel coordinates", "y": 0.98, "yanchor": "top"},
            margin={"l": 60, "r": 130, "t": 80, "b": 30},  # the color bar's room: clipped otherwise
        )
    )
    return figure


def contour_figure(contour: Contour | None, direction: str) -> Any:
    import plotly.graph_objects as go

    if contour is None:
        return None
    figure = go.Figure()
    figure.add_contour(
        x=contour.grid_x,
        y=contour.grid_y,
        z=contour.grid_z,
        name=contour.objective,
        colorscale=objective_colorscale(),
        reversescale=direction != "maximize",
        contours={"coloring": "heatmap"},
        colorbar={"title": {"text": contour.objective}, "thickness": 12},
    )
    figure.add_scatter(
        x=contour.x,
        y=contour.y,
        mode="markers",
        name="trials",
        customdata=[[t, z] for t, z in zip(contour.trials, contour.z, strict=True)],
        marker={"size": 8, "color": "rgba(0,0,0,0)", "line": {"color": GREY, "width": 1.5}},
        hovertemplate="trial %{customdata[0]}: %{customdata[1]:.4~g}<extra></extra>",
    )
    figure.update_layout(
        **_layout(
            380,
            title=f"{contour.objective} over {contour.x_param} and {contour.y_param}",
            showlegend=False,
            xaxis=_param_axis(contour.x_param, contour.x_categories, contour.x_log),
            yaxis=_param_axis(contour.y_param, contour.y_categories, contour.y_log),
        )
    )
    return figure


def slices_figure(slices: list[Slice]) -> Any:
    from plotly.subplots import make_subplots

    if not slices:
        return None
    figure = make_subplots(rows=1, cols=len(slices), shared_yaxes=True, horizontal_spacing=0.04)
    for col, piece in enumerate(slices, start=1):
        figure.add_scatter(
            x=piece.x,
            y=piece.y,
            mode="markers",
            name=piece.param,
            customdata=piece.trials,
            marker={"size": 7, "color": PALETTE[(col - 1) % len(PALETTE)]},
            row=1,
            col=col,
        )
        figure.update_xaxes(_param_axis(piece.param, piece.categories, piece.log), row=1, col=col)
        figure.update_yaxes(AXIS, row=1, col=col)
    figure.update_yaxes(title_text=slices[0].objective, row=1, col=1)
    figure.update_layout(**_layout(300, title="Slices", showlegend=False))
    return figure


def pareto_figure(pareto: ParetoFront | None) -> Any:
    import plotly.graph_objects as go

    if pareto is None or not pareto.points:
        return None
    first, second = pareto.objectives[:2]
    others = [p for p in pareto.points if not p.on_front]
    front = sorted((p for p in pareto.points if p.on_front), key=lambda p: p.values[0])
    figure = go.Figure()
    figure.add_scatter(
        x=[p.values[0] for p in others],
        y=[p.values[1] for p in others],
        customdata=[p.trial for p in others],
        mode="markers",
        name="trials",
        marker={"size": 7, "color": GREY, "opacity": 0.7},
    )
    figure.add_scatter(
        x=[p.values[0] for p in front],
        y=[p.values[1] for p in front],
        customdata=[p.trial for p in front],
        mode="lines+markers",
        name="Pareto front",
        marker={"size": 10, "color": FRONT, "symbol": "diamond"},
        line={"color": FRONT, "width": 1.5, "shape": "hv", "dash": "dot"},
    )

    def title(objective: ObjectiveView) -> str:
        return f"{objective.name} ({'min' if objective.direction == 'minimize' else 'max'})"

    figure.update_layout(
        **_layout(
            340,
            title=f"Pareto front ({len(front)} trials on it)",
            xaxis={**AXIS, "title": {"text": title(first)}},
            yaxis={**AXIS, "title": {"text": title(second)}},
        )
    )
    return figure


def metrics_figure(model: SweepViewModel) -> Any:
    """A sweep without an objective: every metric its trials logged, a panel each, a line per
    trial by step (None before a trial logged one)."""
    from plotly.subplots import make_subplots

    if not model.metrics:
        return None
    figure = make_subplots(rows=len(model.metrics), cols=1, vertical_spacing=0.08)
    for row, metric in enumerate(model.metrics, start=1):
        for curve in metric.trials:
            figure.add_scatter(
                x=curve.steps,
                y=curve.values,
                mode="lines+markers",
                name=f"trial {curve.trial}",
                legendgroup=str(curve.trial),
                showlegend=row == 1,
                line={"color": PALETTE[curve.trial % len(PALETTE)], "width": 1.5},
                row=row,
                col=1,
            )
        figure.update_yaxes(AXIS, title_text=metric.name, row=row, col=1)
        figure.update_xaxes(AXIS, title_text="step", row=row, col=1)
    figure.update_layout(**_layout(220 * len(model.metrics) + 60, title="Every logged metric, per trial"))
    return figure


#: The views in the order the monitor shows them: name -> the figure from a model (None: missing).
VIEWS: dict[ViewName, Any] = {
    "pareto": lambda m: pareto_figure(m.pareto),
    "history": lambda m: history_figure(m.history),
    "importance": lambda m: importance_figure(m.importance),
    "parallel": lambda m: parallel_figure(m.parallel, m.objectives),
    "contour": lambda m: contour_figure(m.contour, m.objectives[0].direction if m.objectives else "minimize"),
    "slices": lambda m: slices_figure(m.slices),
}


def view_figures(model: SweepViewModel) -> dict[ViewName, Any]:
    """Every view's figure (None where the model has nothing to draw; `model.missing` says why),
    the Pareto plot only for a multi-objective sweep."""
    if not model.objectives:  # none of them without an objective (`metrics_figure` draws the sweep)
        return {}
    return {name: build(model) for name, build in VIEWS.items() if name != "pareto" or len(model.objectives) > 1}
