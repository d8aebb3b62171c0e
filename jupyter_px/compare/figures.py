"""The params' view of a comparison as plotly.js figures, built once, here, for every surface:
the JupyterLab extension's comparison panel (sent in `POST px/api/compare`'s answer, where the
extension only puts them in the page's theme) and the notebook's output elsewhere (`render`).

* parallel coordinates: an axis per param that differs (text and booleans as categories) and
  the objective's best value last, a line per run that has one, colored by it (the better end of
  the scale for the better runs);
* importance: a bar per param, the share of the objective's variance its values alone explain,
  largest on top, labelled with its correlation and colored by its sign (the sweep view's
  calculation and axis title).

The look is the neutral one of every figure built in Python (`presentation.figures`).
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..presentation.figures import PlotlyFigure, axis, layout, parallel_coordinates
from ..presentation.series import PALETTE
from ..sweeps.importance import importance_label
from .comparison import Comparison


class ComparisonFigures(BaseModel):
    """The params' view of a comparison: each figure None where it has nothing to draw."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    parallel: PlotlyFigure | None = None
    importance: PlotlyFigure | None = None


def _dimension(label: str, values: list[Any]) -> dict[str, Any]:
    """A numeric axis (a run without the param a gap), or a categorical one: the values' texts
    in order, each run at its text's place."""
    if all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values):
        return {"label": label, "values": values}
    texts = [str(v).lower() if isinstance(v, bool) else str(v) for v in values]
    labels = sorted(set(texts))
    return {
        "label": label,
        "values": [labels.index(text) for text in texts],
        "tickvals": list(range(len(labels))),
        "ticktext": labels,
    }


def parallel_figure(comparison: Comparison) -> PlotlyFigure | None:
    """None with fewer than two runs that have the objective, or no param that differs."""
    metric = next((m for m in comparison.metrics if m.name == comparison.objective), None)
    metric = metric or (comparison.metrics[0] if comparison.metrics else None)
    if metric is None:
        return None
    rows = [row for row in comparison.rows() if _finite(row["best"].get(metric.name))]
    params = [
        name
        for name in comparison.params
        if all(row["params"].get(name) is None or isinstance(row["params"][name], (int, float, str)) for row in rows)
    ]
    if len(rows) < 2 or not params:
        return None
    objective = [row["best"][metric.name] for row in rows]
    dimensions = [_dimension(name, [row["params"].get(name) for row in rows]) for name in params]
    dimensions.append({"label": f"{metric.name} (best, {metric.optimization})", "values": objective})
    return parallel_coordinates(dimensions, objective, dimensions[-1]["label"], metric.optimization == "min")


def importance_figure(comparison: Comparison) -> PlotlyFigure | None:
    """None where no param's importance is known (too few runs with the objective)."""
    if not comparison.importance:
        return None
    items = list(reversed(comparison.importance))  # plotly draws the first category at the bottom

    def label(param: str, correlation: float | None) -> str:
        return param if correlation is None else f"{param} (r {correlation:+.2f})"

    return PlotlyFigure(
        data=[
            {
                "type": "bar",
                "orientation": "h",
                "x": [item.importance for item in items],
                "y": [label(item.param, item.correlation) for item in items],
                # the sign of the correlation: more of the param, more (or less) of the objective
                "marker": {"color": [PALETTE[1] if (item.correlation or 0) < 0 else PALETTE[0] for item in items]},
                "hovertemplate": "%{y}: %{x:.2f}<extra></extra>",
            }
        ],
        layout=layout(
            max(140, 36 * len(items) + 60),
            showlegend=False,
            xaxis=axis(importance_label(comparison.objective or "the metric"), range=[0, 1]),
            yaxis=axis(""),
        ),
    )


def comparison_figures(comparison: Comparison) -> ComparisonFigures:
    return ComparisonFigures(parallel=parallel_figure(comparison), importance=importance_figure(comparison))


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
