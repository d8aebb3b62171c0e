"""How the notebook's plotly figures look, for front-ends other than JupyterLab with the extension.

Every plot of jupyter-px is drawn by plotly (plotly.js in the browser): in JupyterLab by the
extension, which reads the theme's CSS variables; here, for the figures a kernel sends (the
ipywidgets monitors, `%px_plot`, `jupyter_px.compare()` elsewhere than JupyterLab), which cannot
ask the page for its theme (a saved notebook is opened in whatever theme the reader uses). So they
are drawn to read in both: transparent backgrounds, so the plot sits on the notebook's own
background, and text, axes, grid and plotly's toolbar in a grey that reads on white and on dark.
"""

from __future__ import annotations

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
