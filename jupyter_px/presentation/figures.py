"""What every figure built in Python is made of, for the notebook and the JupyterLab extension
alike (`sweep_figures`, `compare.figures`): a figure is plain JSON (`PlotlyFigure`: plotly.js's
`data` and `layout`), so building one needs no plotting library, and the REST API sends it as is.

Its look is the notebook's neutral one (`plot_theme`: transparent grounds, a grey that reads in
Light and Dark, the replica palette, the objective's scale), which a kernel's figure needs since
it cannot ask the page for its theme. The extension swaps exactly these for the theme's own
colors (`labextension/src/plotting/themeFigure.ts`): a figure uses no other color.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from .colors import objective_colorscale
from .plot_theme import AXIS, GREY, THEME_NEUTRAL

#: Fonts drawn in the neutral grey, without plotly's white halo (a blur on a dark ground).
FLAT_FONT = {"color": GREY, "shadow": "none"}


class PlotlyFigure(BaseModel):
    """A figure as plotly.js draws it (`Plotly.react(div, data, layout)`), and as plotly's
    mimetype carries it."""

    data: list[dict[str, Any]]
    layout: dict[str, Any]


def layout(height: int, **more: Any) -> dict[str, Any]:
    """What every figure's layout starts from: the neutral look, the legend at the figure's foot
    (below the x axis' title, never over it)."""
    return {
        **{key: value for key, value in THEME_NEUTRAL.items() if key not in ("xaxis", "yaxis", "template", "legend")},
        "height": height,
        "autosize": True,
        "margin": {"l": 56, "r": 16, "t": 12, "b": 40},
        "legend": {
            "orientation": "h",
            "x": 0,
            "xanchor": "left",
            "yref": "container",
            "y": 0,
            "yanchor": "bottom",
            "bgcolor": "rgba(0,0,0,0)",
        },
        **more,
    }


def axis(title: str, **more: Any) -> dict[str, Any]:
    return {**AXIS, "title": {"text": title}, "automargin": True, **more}


def colorbar(title: str, **more: Any) -> dict[str, Any]:
    """The objective's color bar, titled."""
    return {"tickfont": {"color": GREY}, "title": {"text": title, "font": {"color": GREY}}, "thickness": 12, **more}


def parallel_coordinates(
    dimensions: list[dict[str, Any]], color: list[Any], title: str, lower_is_better: bool
) -> PlotlyFigure:
    """Parallel coordinates: a line per trial or run across `dimensions`, colored by `color` on
    the objective's scale, the better end for the better ones (a sweep's view and a comparison's)."""
    return PlotlyFigure(
        data=[
            {
                "type": "parcoords",
                "line": {
                    "color": color,
                    "colorscale": objective_colorscale(),
                    "reversescale": lower_is_better,
                    "showscale": True,
                    "colorbar": colorbar(title, x=1.02, xanchor="left"),
                },
                "dimensions": dimensions,
                "labelfont": FLAT_FONT,
                "tickfont": FLAT_FONT,
                "rangefont": FLAT_FONT,
            }
        ],
        # Room on the right for the color bar (clipped otherwise), on top for the labels.
        layout=layout(340, margin={"l": 64, "r": 120, "t": 48, "b": 24}),
    )


def escape(text: str) -> str:
    """Text for plotly's templates, which read `%{...}` and HTML."""
    return "".join(f"&#{ord(c)};" if c in "<>&%{}" else c for c in text)
