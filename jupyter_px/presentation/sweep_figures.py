"""What a tuner looks at, as plotly.js figures built once, here, for every surface: the JupyterLab
extension's sweep views (served beside the view-model by `GET px/api/sweeps/<ref>/view`; the
extension only puts a figure in the page's theme, `labextension/src/plotting/themeFigure.ts`)
and the notebook's ipywidgets monitor (front-ends without the extension, as plotly's mimetype).

Every number comes from the sweep's view-model (`sweeps.view_model`); these functions decide how
it is drawn:

* history: each complete trial's objective (points) and the best so far (a step line), a
  figure per objective;
* importance: each parameter's eta squared (the comparison's calculation), largest on top, a
  figure per objective;
* parallel coordinates: an axis per parameter (categories as ticks, a log one at log10 with ticks
  in real units) and objective, a line per trial colored by the first objective, the better end
  for the better;
* contour: the objective interpolated over the two most important parameters, the trials on it;
* slices: each parameter against the objective, side by side;
* Pareto: the first two objectives, every trial, the front marked and joined.

A figure is plain JSON in the neutral look the extension recolors (`figures.PlotlyFigure`). A
view the model has nothing to draw for has no figure (None, or an empty list); the model's
`missing` says why.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..sweeps.importance import importance_label
from ..sweeps.view_model import (
    Axis,
    Contour,
    History,
    Importance,
    ObjectiveView,
    ParallelCoordinates,
    ParetoFront,
    ParetoPoint,
    Slice,
    SweepViewModel,
    TrialCurve,
)
from .colors import objective_colorscale
from .figures import PlotlyFigure, axis, colorbar, escape, layout, parallel_coordinates
from .plot_theme import AXIS, GREY
from .series import PALETTE

#: The trials' points, and the best-so-far line (and the Pareto front).
POINTS, BEST, FRONT = PALETTE[0], PALETTE[1], PALETTE[2]


class SweepFigures(BaseModel):
    """Every tuning view's figure, by view (`SweepViewModel.missing` says why one is absent)."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    pareto: PlotlyFigure | None = None
    history: list[PlotlyFigure] = Field(default_factory=list, description="one per objective")
    importance: list[PlotlyFigure] = Field(default_factory=list, description="one per objective")
    parallel: PlotlyFigure | None = None
    contour: PlotlyFigure | None = None
    slices: PlotlyFigure | None = None
    metrics: list[PlotlyFigure] = Field(
        default_factory=list, description="a sweep without an objective: one per logged metric, a line per trial"
    )


class SweepView(SweepViewModel):
    """The sweep's view-model and its figures: what `GET px/api/sweeps/<ref>/view` answers."""

    figures: SweepFigures


def param_axis(title: str, categories: list[str] | None, log: bool) -> dict[str, Any]:
    """A parameter's axis: ticks at a categorical one's categories' indices; a log one drawn log."""
    shape = axis(title, type="log" if log else "linear", exponentformat="power")
    if categories:
        shape.update(tickmode="array", tickvals=list(range(len(categories))), ticktext=categories)
    return shape


def log_ticks(positions: list[float]) -> tuple[list[float], list[str]]:
    """Ticks of an axis drawn at log10 of its values, labelled in the values' own units (0.001,
    not -3): a tick per decade within the range, or its ends and middle when it spans less."""
    low, high = min(positions), max(positions)
    decades = list(range(math.ceil(low), math.floor(high) + 1))
    ticks = [float(t) for t in decades] if len(decades) >= 2 else [low, (low + high) / 2, high]
    return ticks, [f"{10**t:.3g}" for t in ticks]


def history_figure(history: History) -> PlotlyFigure:
    """One objective by trial: each trial's value, and the best so far as a step line."""
    trials = [p.trial for p in history.points]
    return PlotlyFigure(
        data=[
            {
                "type": "scatter",
                "mode": "markers",
                "name": history.objective,
                "x": trials,
                "y": [p.value for p in history.points],
                "marker": {"size": 7, "color": POINTS},
                "hovertemplate": "trial %{x}: %{y:.4~g}<extra></extra>",
            },
            {
                "type": "scatter",
                "mode": "lines",
                "name": "best so far",
                "x": trials,
                "y": [p.best for p in history.points],
                "line": {"color": BEST, "width": 2, "shape": "hv"},
                "hovertemplate": "best after trial %{x}: %{y:.4~g}<extra></extra>",
            },
        ],
        layout=layout(
            280,
            margin={"l": 56, "r": 16, "t": 12, "b": 64},
            showlegend=True,
            xaxis=axis("trial", **({"dtick": 1} if len(trials) <= 20 else {})),
            yaxis=axis(f"{history.objective} ({history.direction})", exponentformat="power"),
        ),
    )


def importance_figure(importance: Importance) -> PlotlyFigure:
    """A bar per parameter, its share of the objective's variance, largest on top."""
    names = list(importance.params)
    return PlotlyFigure(
        data=[
            {
                "type": "bar",
                "orientation": "h",
                # plotly draws a horizontal bar chart's first category at the bottom
                "x": [importance.params[name] for name in reversed(names)],
                "y": list(reversed(names)),
                "marker": {"color": POINTS},
                "hovertemplate": "%{y}: %{x:.2f}<extra></extra>",
            }
        ],
        layout=layout(
            max(140, 36 * len(names) + 60),
            showlegend=False,
            xaxis=axis(importance_label(importance.objective), range=[0, 1]),
            yaxis=axis(""),
        ),
    )


def _dimension(column: Axis) -> dict[str, Any]:
    """A parallel-coordinates axis: categories as ticks; a log one at log10, ticked in its units."""
    if column.categorical and column.categories:
        return {
            "label": column.name,
            "values": column.values,
            "tickvals": list(range(len(column.categories))),
            "ticktext": column.categories,
            "range": [0, max(len(column.categories) - 1, 1)],
        }
    if column.log:
        positions = [math.log10(v) for v in column.values]
        tickvals, ticktext = log_ticks(positions)
        return {"label": f"{column.name} (log scale)", "values": positions, "tickvals": tickvals, "ticktext": ticktext}
    return {"label": column.name, "values": column.values}


def parallel_figure(parallel: ParallelCoordinates, objectives: list[ObjectiveView]) -> PlotlyFigure:
    """An axis per parameter and objective, a line per complete trial colored by the model's
    `color` objective, the better end of the scale for the better trials."""
    color = next(a.values for a in parallel.axes if a.role == "objective" and a.name == parallel.color)
    direction = next((o.direction for o in objectives if o.name == parallel.color), "minimize")
    return parallel_coordinates([_dimension(a) for a in parallel.axes], color, parallel.color, direction != "maximize")


def contour_figure(contour: Contour, direction: str) -> PlotlyFigure:
    """The objective over two parameters: interpolated contours, and the trials as points."""
    return PlotlyFigure(
        data=[
            {
                "type": "contour",
                "name": contour.objective,
                "x": contour.grid_x,
                "y": contour.grid_y,
                "z": contour.grid_z,
                "colorscale": objective_colorscale(),
                "reversescale": direction != "maximize",
                "contours": {"coloring": "heatmap"},
                "line": {"width": 0.5, "color": AXIS["gridcolor"]},
                "colorbar": colorbar(contour.objective),
                "hovertemplate": (
                    f"{escape(contour.x_param)} %{{x:.3~g}}, {escape(contour.y_param)} %{{y:.3~g}}: "
                    "%{z:.4~g}<extra>interpolated</extra>"
                ),
            },
            {
                "type": "scatter",
                "mode": "markers",
                "name": "trials",
                "x": contour.x,
                "y": contour.y,
                "customdata": [[t, z] for t, z in zip(contour.trials, contour.z, strict=True)],
                "marker": {"size": 8, "color": "rgba(0,0,0,0)", "line": {"color": GREY, "width": 1.5}},
                "hovertemplate": "trial %{customdata[0]}: %{customdata[1]:.4~g}<extra></extra>",
            },
        ],
        layout=layout(
            360,
            margin={"l": 56, "r": 24, "t": 12, "b": 40},
            showlegend=False,
            xaxis=param_axis(contour.x_param, contour.x_categories, contour.x_log),
            yaxis=param_axis(contour.y_param, contour.y_categories, contour.y_log),
        ),
    )


def slices_figure(slices: list[Slice]) -> PlotlyFigure:
    """Each parameter against the objective, a panel each side by side, the y axis shared."""
    gap = 0.04
    width = (1 - gap * (len(slices) - 1)) / max(len(slices), 1)
    axes: dict[str, Any] = {}
    data = []
    for i, piece in enumerate(slices):
        suffix = "" if i == 0 else str(i + 1)
        start = i * (width + gap)
        axes[f"xaxis{suffix}"] = {
            **param_axis(piece.param, piece.categories, piece.log),
            "domain": [start, start + width],
            "anchor": "y",
        }
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": piece.param,
                "xaxis": f"x{suffix}",
                "yaxis": "y",
                "x": piece.x,
                "y": piece.y,
                "customdata": piece.trials,
                "marker": {"size": 7, "color": PALETTE[i % len(PALETTE)]},
                "hovertemplate": (
                    f"trial %{{customdata}}: {escape(piece.param)} %{{x:.3~g}}, %{{y:.4~g}}<extra></extra>"
                ),
            }
        )
    return PlotlyFigure(
        data=data,
        layout=layout(
            280,
            showlegend=False,
            **axes,
            yaxis=axis(slices[0].objective if slices else "objective", exponentformat="power"),
        ),
    )


def pareto_figure(pareto: ParetoFront) -> PlotlyFigure:
    """The first two objectives, every complete trial; the trials on the front larger, in the
    accent color and joined in order of the first."""
    first, second = pareto.objectives[:2]
    others = [p for p in pareto.points if not p.on_front]
    front = sorted((p for p in pareto.points if p.on_front), key=lambda p: p.values[0])

    def title(objective: ObjectiveView) -> str:
        return f"{objective.name} ({'min' if objective.direction == 'minimize' else 'max'})"

    def trace(points: list[ParetoPoint], **style: Any) -> dict[str, Any]:
        return {
            "type": "scatter",
            "x": [p.values[0] for p in points],
            "y": [p.values[1] for p in points],
            "customdata": [p.trial for p in points],
            **style,
        }

    return PlotlyFigure(
        data=[
            trace(
                others,
                mode="markers",
                name="trials",
                marker={"size": 7, "color": GREY, "opacity": 0.7},
                hovertemplate="trial %{customdata}: %{x:.4~g}, %{y:.4~g}<extra></extra>",
            ),
            trace(
                front,
                mode="lines+markers",
                name="Pareto front",
                marker={"size": 10, "color": FRONT, "symbol": "diamond"},
                line={"color": FRONT, "width": 1.5, "shape": "hv", "dash": "dot"},
                hovertemplate="trial %{customdata} (on the front): %{x:.4~g}, %{y:.4~g}<extra></extra>",
            ),
        ],
        layout=layout(
            320,
            margin={"l": 56, "r": 16, "t": 12, "b": 64},
            showlegend=True,
            xaxis=axis(title(first), exponentformat="power"),
            yaxis=axis(title(second), exponentformat="power"),
        ),
    )


def metric_figure(name: str, curves: list[TrialCurve]) -> PlotlyFigure:
    """A sweep without an objective: one metric its trials logged, a line per trial by step (no
    trial is better than another, so none stands out)."""
    steps = {step for curve in curves for step in curve.steps}
    short = bool(steps) and all(float(step).is_integer() for step in steps) and max(steps) - min(steps) <= 10
    return PlotlyFigure(
        data=[
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"trial {curve.trial}",
                "x": curve.steps,
                "y": curve.values,
                "connectgaps": False,
                "line": {"color": PALETTE[curve.trial % len(PALETTE)], "width": 1.5},
                "hovertemplate": f"%{{y:.4~g}}<extra>trial {curve.trial}</extra>",
            }
            for curve in curves
        ],
        layout=layout(
            260,
            margin={"l": 56, "r": 16, "t": 12, "b": 64 + 22 * (len(curves) // 5)},
            showlegend=True,
            hovermode="x unified" if len(curves) <= 24 else "closest",
            xaxis=axis("step", **({"dtick": 1, "tick0": 0} if short else {})),
            yaxis=axis(name, exponentformat="power"),
        ),
    )


def sweep_figures(model: SweepViewModel) -> SweepFigures:
    """Every view's figure from the model, the Pareto plot only for a multi-objective sweep; a
    sweep without an objective has its metrics' figures only."""
    if not model.objectives:
        return SweepFigures(metrics=[metric_figure(m.name, m.trials) for m in model.metrics])
    first = model.objectives[0]
    return SweepFigures(
        pareto=pareto_figure(model.pareto) if model.pareto is not None and model.pareto.points else None,
        history=[history_figure(h) for h in model.history if h.points],
        importance=[importance_figure(i) for i in model.importance or []],
        parallel=parallel_figure(model.parallel, model.objectives) if model.parallel is not None else None,
        contour=contour_figure(model.contour, first.direction) if model.contour is not None else None,
        slices=slices_figure(model.slices) if model.slices else None,
    )


def sweep_view(model: SweepViewModel) -> SweepView:
    """The model with its figures (what the REST API sends)."""
    return SweepView(**dict(model), figures=sweep_figures(model))
