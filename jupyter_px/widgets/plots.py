"""Metric plots: a static figure for `%px_plot` and the live plot inside the run monitor.

Plotly, as every plot of jupyter-px (the JupyterLab extension draws with plotly.js; docs/ui.md
says why): `%px_plot` needs a figure that survives nbconvert and HTML export, which plotly's
`application/vnd.plotly.v1+json` output does (it embeds the data and renders without a kernel),
and the live plot of the ipywidgets monitor (front-ends without the extension) is plotly's
`FigureWidget`: one library, one look, figures a user can take further with an API they know.
Both read in light and dark themes (`presentation.plot_theme`).

Both plots show one metric per panel with one trace per replica, so a run with 64 replicas is
64 traces, not 64 figures. Traces are decimated to at most `MAX_POINTS` points (every k-th point
plus the last): a plot is at most a few thousand pixels wide, and sending 100k points to the
browser on every update would make the monitor, not the training, the slow part.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from copy import deepcopy

import numpy as np

from ..presentation.plot_theme import AXIS as _AXIS
from ..presentation.plot_theme import GREY as _GREY
from ..presentation.plot_theme import THEME_NEUTRAL, private_figure_widget
from ..presentation.series import MAX_POINTS, PALETTE, MetricData, xy  # noqa: F401 (re-exported)
from ..service import logged_by_the_code


def _metric_names(data: MetricData, wanted: Sequence[str] | None) -> list[str]:
    """The metrics `wanted` that were logged, or else every one the code logged (the `system/`
    metrics only when asked for by name)."""
    names = sorted({name for metrics in data.values() for name in metrics})
    if not wanted:
        return [name for name in names if logged_by_the_code(name)]
    return [name for name in wanted if name in names]


def static_figure(data: MetricData, metrics: Sequence[str] | None = None, title: str = ""):
    """A plotly Figure: one panel per metric, one line per replica. `data` is
    `MetricsReader.data` (replica -> metric -> Series)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    names = _metric_names(data, metrics)
    figure = make_subplots(
        rows=max(1, len(names)),
        cols=1,
        shared_xaxes=True,
        subplot_titles=names,
        vertical_spacing=0.08 if len(names) > 1 else 0.0,
    )
    palette = _palette()
    for row, name in enumerate(names, start=1):
        for position, replica in enumerate(sorted(data)):
            series = data[replica].get(name)
            if series is None or not len(series):
                continue
            x, y = xy(series)
            figure.add_trace(  # lists, not arrays: the saved output stays plain JSON
                go.Scatter(
                    x=x.tolist(),
                    y=y.tolist(),
                    mode="lines",
                    name=replica,
                    legendgroup=replica,
                    showlegend=row == 1,
                    line={"color": palette[position % len(palette)]},
                ),
                row=row,
                col=1,
            )
    figure.update_xaxes(title_text="step", row=max(1, len(names)), col=1)
    figure.update_xaxes(**_AXIS)
    figure.update_yaxes(**_AXIS)
    figure.update_annotations(font_color=_GREY)  # the subplot titles
    figure.update_layout(
        **{key: value for key, value in THEME_NEUTRAL.items() if key not in ("xaxis", "yaxis")},
        title=title or None,
        height=260 * max(1, len(names)) + 60,
        margin={"l": 50, "r": 20, "t": 60 if title else 30, "b": 40},
    )
    return figure


def _palette() -> list[str]:
    return list(PALETTE)


class LivePlot:
    """The monitor's plot: a metric selector and a `FigureWidget` with one trace per replica.

    Created by the monitor when the first metric arrives (a run without metrics never loads
    plotly's widget bundle). `update()` only touches traces that received points, in one
    batched message.
    """

    def __init__(self) -> None:
        import ipywidgets as widgets
        import plotly.graph_objects as go

        self._go = go
        self.selector = widgets.Dropdown(description="metric", options=[], layout=widgets.Layout(width="320px"))
        self.figure = private_figure_widget(
            layout={
                **THEME_NEUTRAL,
                "height": 320,
                "margin": {"l": 50, "r": 20, "t": 20, "b": 40},
                "xaxis": {**_AXIS, "title": {"text": "step"}},
                "legend": THEME_NEUTRAL["legend"],
            }
        )
        self.widget = widgets.VBox([self.selector, self.figure])
        self._traces: dict[str, int] = {}  # replica -> trace index for the selected metric
        self._data: MetricData = {}
        self._palette = _palette()
        self.selector.observe(self._on_select, names="value")

    @property
    def metric(self) -> str | None:
        return self.selector.value

    def update(self, data: MetricData, changed: Iterable[tuple[str, str]]) -> None:
        """Show new points. `data` is the reader's replica -> metric -> Series, `changed` the
        (replica, metric) keys that got points since the last call."""
        self._data = data
        names = sorted({name for metrics in data.values() for name in metrics})
        if list(self.selector.options) != names:
            current = self.selector.value
            self.selector.options = names
            wanted = current if current in names else ("loss" if "loss" in names else (names[0] if names else None))
            if self.selector.value != wanted:
                self.selector.value = wanted  # redraws every trace through _on_select
                return
        metric = self.selector.value
        if metric is None:
            return
        replicas = sorted({replica for replica, name in changed if name == metric})
        if replicas:
            self._draw(metric, replicas)

    def _on_select(self, change) -> None:
        self.figure.data = ()
        self._traces = {}
        if change["new"] is not None:
            self._draw(change["new"], sorted(r for r, metrics in self._data.items() if change["new"] in metrics))

    def _draw(self, metric: str, replicas: list[str]) -> None:
        order = {replica: position for position, replica in enumerate(sorted(self._data))}
        new_traces, new_names = [], []
        with self.figure.batch_update():
            for replica in replicas:
                series = self._data.get(replica, {}).get(metric)
                if series is None:
                    continue
                x, y = xy(series)
                index = self._traces.get(replica)
                if index is None:
                    color = self._palette[order[replica] % len(self._palette)]
                    new_traces.append(self._go.Scatter(x=x, y=y, mode="lines", name=replica, line={"color": color}))
                    new_names.append(replica)
                else:
                    trace = self.figure.data[index]
                    trace.x, trace.y = x, y
        if new_traces:  # one message for all new traces, not one per replica
            first = len(self.figure.data)
            self.figure.add_traces(new_traces)
            self._traces.update({name: first + i for i, name in enumerate(new_names)})

    def finalize(self) -> None:
        """Put the complete figure into the synced state, so a saved notebook (nbclient's widget
        state, JupyterLab's "save widget state") shows the final plot; plotly's own updates are
        transient messages that the saved state does not keep."""
        keep_in_saved_state(self.figure)

    def point_count(self) -> int:
        return sum(len(trace.x) for trace in self.figure.data if trace.x is not None)


def keep_in_saved_state(figure) -> None:
    """Copy a FigureWidget's figure into its synced `_widget_data` / `_widget_layout`, which a
    saved notebook keeps (plotly's own edits are transient messages it does not)."""
    figure._widget_layout = deepcopy(figure._layout_obj._props)
    figure._widget_data = _plain(deepcopy(figure._data))


def _plain(value):
    """numpy arrays -> lists, so the saved widget state is plain JSON anyone can read."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
