"""How the notebook's plotly figures look, for front-ends other than JupyterLab with the extension.

Every plot of jupyter-px is drawn by plotly (plotly.js in the browser): in JupyterLab by the
extension, which reads the theme's CSS variables; here, for the figures a kernel sends (the
ipywidgets monitors, `%px_plot`, `jupyter_px.compare()` elsewhere than JupyterLab), which cannot
ask the page for its theme (a saved notebook is opened in whatever theme the reader uses). So they
are drawn to read in both: transparent backgrounds, so the plot sits on the notebook's own
background, and text, axes, grid and plotly's toolbar in a grey that reads on white and on dark.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

GREY = "#8c8c8c"  # about 3.4:1 on white and 5:1 on JupyterLab Dark's #111
GRID = "rgba(140,140,140,0.25)"
AXIS = {"gridcolor": GRID, "zerolinecolor": GRID, "linecolor": GRID, "color": GREY}

#: Layout that reads in light and dark themes: transparent backgrounds, grey text and grid, the
#: legend under the plot (a plot the width of a notebook keeps its width for the lines).
THEME_NEUTRAL: dict = {
    "template": "none",
    "paper_bgcolor": "rgba(0,0,0,0)",
    "plot_bgcolor": "rgba(0,0,0,0)",
    "font": {"color": GREY},
    "xaxis": AXIS,
    "yaxis": AXIS,
    "legend": {"bgcolor": "rgba(0,0,0,0)", "orientation": "h", "x": 0, "y": -0.2, "yanchor": "top"},
    "modebar": {"bgcolor": "rgba(0,0,0,0)", "color": GREY, "activecolor": "#1f77b4"},
}

#: The plotly.js config of every figure the notebook shows (the extension's `CONFIG` in
#: `labextension/src/plotting/figures.ts` is the same): no plotly logo, and nothing that sends a
#: figure off this machine. plotly.js 4 shows "Share chart..." by default, which posts the figure's
#: data (a user's training curves) to plotly's cloud after one confirmation (plotly.js 4 dropped
#: the older "Edit in Chart Studio" and `showLink`). It is off, its button removed and plotly's
#: server URL empty, in the notebook's outputs, its widgets and the HTML a saved notebook keeps.
PLOT_CONFIG: dict = {
    "displaylogo": False,
    "showSendToCloud": False,
    "plotlyServerURL": "",
    "modeBarButtonsToRemove": ["sendChartToCloud", "lasso2d", "select2d", "autoScale2d"],
}


def plotly_json(figure: Any) -> dict:
    """A figure as plotly's mimetype (`application/vnd.plotly.v1+json`) carries it: its data and
    layout, with PLOT_CONFIG (JupyterLab's plotly renderer hands `config` to plotly.js). `figure`
    is plotly's, or one already JSON (a pydantic model of it, `sweep_figures.PlotlyFigure`)."""
    import json

    if hasattr(figure, "to_json"):
        drawn = json.loads(figure.to_json())
    else:
        drawn = figure.model_dump(mode="json")
    return {**drawn, "config": copy.deepcopy(PLOT_CONFIG)}


def plotly_html(figure: Any) -> str:
    """A figure as HTML for exports (nbconvert, GitHub), with PLOT_CONFIG."""
    return figure.to_html(include_plotlyjs="cdn", full_html=False, config=copy.deepcopy(PLOT_CONFIG))


def private_figure_widget(**kwargs: Any) -> Any:
    """A plotly `FigureWidget` (the ipywidgets monitors' plots) with PLOT_CONFIG, whose comm
    opens with its whole figure and config."""
    return _opened_whole()(**kwargs)


@functools.cache
def _opened_whole() -> type:
    """A `FigureWidget` that opens its comm only once its layout, data and config are set.

    ipywidgets opens a widget's comm at the end of `Widget.__init__`, with the state it has then.
    plotly's `FigureWidget` sets `_widget_layout` and `_widget_data` after that (plotly 7,
    `basewidget.py`), and PLOT_CONFIG is set after the constructor: each reaches the browser as a
    later update. plotly.js draws the view once, from the model's state when the view renders,
    and does not redraw on a layout or config change. A view rendered before those updates
    arrived, seen once on a loaded machine, kept plotly's defaults: dark-grey ticks on the Dark
    theme, and the "Share chart" button. Opened whole, the first state is the whole figure.
    """
    import plotly.graph_objects as go

    class PrivateFigureWidget(go.FigureWidget):
        _opening_held = False

        def __init__(self, **kwargs: Any) -> None:
            self._opening_held = True
            super().__init__(**kwargs)
            self._config = copy.deepcopy(PLOT_CONFIG)
            self._opening_held = False
            self.open()

        def open(self) -> None:
            if not self._opening_held:
                super().open()

    return PrivateFigureWidget
