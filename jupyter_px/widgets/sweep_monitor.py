"""The sweep monitor: the sweep's state and best trial, a trials table, the objective per trial
(a live line per trial, by step), and what a tuner looks at, drawn from the sweep's view-model
(`presentation.sweep_figures`, the views the JupyterLab extension draws): the optimization
history, parameter importance, parallel coordinates, a contour and slices, and a multi-objective
sweep's Pareto front; a view the model says is missing shows the model's reason instead.

Like the run monitor it only reads (the sweep's `status.json`, written by its controller) and
updates from a background thread (the kernel's loop does not run while a cell blocks on
`--wait`); a Stop button stops the sweep and its running trials. The thread ends after the
final refresh of a finished sweep.
"""

from __future__ import annotations

import html
import threading
from typing import Any

import ipywidgets as widgets

from ..presentation.figures import PlotlyFigure
from ..presentation.sweep_figures import SweepFigures, sweep_figures
from ..service import SweepStatus, TrialState, state_word
from ..sweeps.view import TRIAL_HEADERS, best_text, counts_text, trial_rows
from ..sweeps.view_model import SweepViewModel, ViewName
from . import live_updates
from .plots import THEME_NEUTRAL
from .run_mime import SWEEP_MIMETYPE, sweep_payload

#: Each view's title above its plot or its reason, in the order the monitor shows them.
VIEW_TITLES: dict[ViewName, str] = {
    "pareto": "Pareto front",
    "history": "Optimization history",
    "importance": "Parameter importance",
    "parallel": "Parallel coordinates",
    "contour": "Contour",
    "slices": "Slices",
}

VIEWS: tuple[ViewName, ...] = tuple(VIEW_TITLES)

#: What stands where the charts will be, until a trial has reported something to draw.
CHARTS_WAITING = "charts: waiting for the first trial to report"

#: Colors of trial states in the table (the run monitor's palette: done, stopped early, failed).
STATE_COLORS = {
    TrialState.PENDING: "#7f7f7f",
    TrialState.RUNNING: "#1f77b4",
    TrialState.COMPLETE: "#2ca02c",
    TrialState.PRUNED: "#ff7f0e",
    TrialState.FAILED: "#d62728",
    TrialState.STOPPED: "#7f7f7f",
}


def trials_table_html(status: SweepStatus) -> str:
    """The trials table as HTML (best trial in bold)."""
    head = "".join(f"<th style='text-align:left;padding:2px 8px'>{h}</th>" for h in TRIAL_HEADERS)
    body = []
    for row, trial in zip(trial_rows(status), sorted(status.trials, key=lambda t: t.number), strict=True):
        color = STATE_COLORS.get(trial.state, "inherit")
        weight = "bold" if trial.number == status.best else "normal"
        cells = []
        for i, cell in enumerate(row):
            style = f"padding:2px 8px;font-weight:{weight}" + (f";color:{color}" if i == 1 else "")
            cells.append(f"<td style='{style}'>{html.escape(cell)}</td>")
        body.append(f"<tr class='px-sweep-trial'>{''.join(cells)}</tr>")
    return (
        "<table class='px-sweep-trials' style='border-collapse:collapse;font-family:monospace;font-size:12px'>"
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def header_html(sweep_id: str, status: SweepStatus, owner_problem: str | None) -> str:
    message = f" &mdash; {html.escape(status.message)}" if status.message else ""
    problem = f"<div style='color:#d62728'>{html.escape(owner_problem)}</div>" if owner_problem else ""
    return (
        f"<div class='px-sweep-header'><b>sweep {html.escape(sweep_id)}</b>: {status.state.value}{message}"
        f"<br>trials: {html.escape(counts_text(status))}; best: {html.escape(best_text(status))}{problem}</div>"
    )


def objective_figure(status: SweepStatus) -> Any:
    """One line per trial: the objective's intermediate values by step."""
    import plotly.graph_objects as go

    figure = go.Figure()
    for trial in sorted(status.trials, key=lambda t: t.number):
        # A trial that reported no step but has a value is a point at its last step: a finished
        # sweep never draws bare axes.
        points = trial.intermediate or ([(trial.step or 0, trial.value)] if trial.value is not None else [])
        if not points:
            continue
        steps, values = zip(*points, strict=True)
        best = trial.number == status.best
        figure.add_scatter(
            x=list(steps),
            y=list(values),
            mode="lines+markers",
            name=f"trial {trial.number} ({state_word(trial.state.value).lower()})",
            line={"width": 4 if best else 1.5, "dash": "dot" if trial.state == TrialState.PRUNED else "solid"},
        )
    figure.update_layout(
        **THEME_NEUTRAL,  # read in Light and Dark alike, as the run monitor's plots
        title=f"{status.objective or 'objective'} per trial",
        xaxis_title="step",
        yaxis_title=status.objective or "value",
        height=320,
        margin={"l": 50, "r": 10, "t": 40, "b": 40},
    )
    return figure


PLOTLY_MIMETYPE = "application/vnd.plotly.v1+json"

#: A plot of the monitor shows these: a plotly figure, or the JSON of one (`PlotlyFigure`).
Shown = Any


def _plot_output(figures: list[Shown]) -> widgets.Output:
    """A plot of the monitor: an output widget that shows `figures` (one per objective where a
    view has several; nothing for none).

    Plotly's own mimetype, which JupyterLab's plotly renderer (plotly's labextension) draws in
    one call, and which a saved notebook keeps in the widget's state. Not a `FigureWidget`: its
    view draws an empty placeholder plot when it is attached and the figure just after, and
    now and then (a loaded machine, in CI: the objective once, the slices once) the placeholder
    is what stays: an empty plot no later edit fills."""
    output = widgets.Output()
    if figures:
        _redraw(output, figures)
    return output


def _redraw(output: widgets.Output, figures: list[Shown]) -> None:
    """Show `figures` in the plot's output, in place of what it showed (one synced message)."""
    from ..presentation.plot_theme import plotly_json

    output.outputs = tuple(
        {
            "output_type": "display_data",
            "data": {PLOTLY_MIMETYPE: plotly_json(figure), "text/plain": "<figure>"},
            "metadata": {},
        }
        for figure in figures
    )


def plotted(output: widgets.Output, index: int = 0) -> dict[str, Any] | None:
    """The `index`-th figure a plot of the monitor shows, as plotly's JSON (`data`, `layout`,
    `config`); None while it shows none."""
    shown = [item["data"][PLOTLY_MIMETYPE] for item in output.outputs if PLOTLY_MIMETYPE in (item.get("data") or {})]
    return shown[index] if index < len(shown) else None


def _views_of(model: SweepViewModel) -> list[ViewName]:
    """The views a sweep has: none without an objective (its metrics draw it), the Pareto plot
    only with two objectives or more."""
    if not model.objectives:
        return []
    return [name for name in VIEWS if name != "pareto" or len(model.objectives) > 1]


def _figures_of(figures: SweepFigures, name: ViewName) -> list[PlotlyFigure]:
    drawn = getattr(figures, name)
    return list(drawn) if isinstance(drawn, list) else [drawn] if drawn is not None else []


class SweepMonitor(widgets.VBox):
    """Live view of one sweep; `refresh()` reads its status once, `start()` keeps it updating.

    Shown at once: the constructor draws only the header, the Stop button and the trials table
    (one read of `status.json`, no plotting library), so a sweep cell returns as soon as its
    sweep is recorded, whatever its size. The plots (plotly figures, seconds to build on
    a loaded machine) are built by the first full `refresh()`: the updating thread's first step
    (autostart), or the constructor itself when the monitor does not update on its own, once a
    trial has reported something to draw (until then a line says the charts are waiting)."""

    def __init__(self, sweep: Any, *, interval: float = 1.0, autostart: bool = True, **kwargs: Any):

        self.sweep = sweep
        self.sweep_id = sweep.sweep_id
        self.interval = interval
        self.finished = False
        self.last_status: SweepStatus | None = None
        self._stop = threading.Event()
        self._lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self.header = widgets.HTML()
        self.table = widgets.HTML()
        self.stop_button = widgets.Button(description="Stop sweep", button_style="danger", icon="stop")
        self.stop_button.on_click(lambda _: self._stop_sweep())
        self.charts_note = widgets.HTML(f"<div class='px-sweep-charts-note'>{CHARTS_WAITING}</div>")
        self.plots = widgets.VBox([self.charts_note])
        self.view_plots: dict[str, Any] = {}
        self.view_boxes: dict[str, Any] = {}
        self.view_reasons: dict[str, Any] = {}
        self.view_sections: dict[str, Any] = {}
        self.objective_plot: Any = None
        self.parallel_plot: Any = None
        self.last_view: SweepViewModel | None = None
        self._shown_points: tuple = ()
        super().__init__([self.header, self.stop_button, self.table, self.plots], **kwargs)
        if autostart:
            self._refresh_text()
            if not self.finished:
                self.start()  # its first step draws the plots, off the cell's thread
                return
        self.refresh()

    def __repr__(self) -> str:
        status = self.last_status
        state = status.state.value if status else "?"
        return f"<SweepMonitor {self.sweep_id}: {state}>"

    def _build_plots(self, objective: list[Shown], figures: SweepFigures) -> None:
        """The plot widgets, once, each showing its first figures (`_plot_output`): the
        objective per trial (or each metric, a sweep without one) and a section per view (its
        title, its plot in a box hidden while the view is missing, and the model's reason when
        it is)."""
        self.objective_plot = _plot_output(objective)
        self.objective_plot.add_class("px-sweep-objective")
        # the box is what hides (a section keeps its title and reason beside it).
        self.view_plots = {name: _plot_output(_figures_of(figures, name)) for name in VIEWS}
        self.view_boxes = {name: widgets.VBox([plot]) for name, plot in self.view_plots.items()}
        self.view_reasons = {name: widgets.HTML() for name in VIEWS}
        self.view_sections = {
            name: widgets.VBox(
                [
                    widgets.HTML(f"<div class='px-sweep-view-title'><b>{VIEW_TITLES[name]}</b></div>"),
                    self.view_reasons[name],
                    self.view_boxes[name],
                ]
            )
            for name in VIEWS
        }
        for name, section in self.view_sections.items():
            section.add_class(f"px-sweep-view-{name}")  # where a page (and a browser test) finds it
        self.parallel_plot = self.view_plots["parallel"]
        self.charts_note.value = ""
        self.plots.children = (self.charts_note, self.objective_plot, *self.view_sections.values())

    def _refresh_text(self) -> tuple[Any, SweepStatus]:
        """The header, the table and the button from one read; no plot."""
        with self._lock:
            view = self.sweep.service.view(self.sweep_id)
            status = view.status
            self.last_status = status
            self.header.value = header_html(self.sweep_id, status, view.owner_problem)
            self.table.value = trials_table_html(status)
            self.finished = status.state.finished
            self.stop_button.disabled = self.finished
            # A finished sweep has nothing to stop: a neutral, disabled button, not a red one.
            self.stop_button.button_style = "" if self.finished else "danger"
            return view, status

    def refresh(self) -> SweepStatus:
        with self._lock:
            _, status = self._refresh_text()
            objective = bool(status.objectives) or status.objective is not None
            ended = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAILED, TrialState.STOPPED)
            reported = any(t.intermediate or t.value is not None or t.state in ended for t in status.trials)
            if not reported and not status.state.finished:
                return status  # nothing to draw yet: no chart of invented axes
            points = tuple((t.number, t.state.value, len(t.intermediate), t.value) for t in status.trials)
            if points != self._shown_points or self.last_view is None:  # redraw only when a trial moved
                self._shown_points = points
                model = self.sweep.service.view_model(self.sweep_id)
                figures = sweep_figures(model)
                # no objective: every logged metric per trial, and once how to declare one
                shown = [objective_figure(status)] if objective else figures.metrics
                first = self.objective_plot is None
                if first:
                    self._build_plots(shown, figures)
                elif shown:
                    _redraw(self.objective_plot, shown)
                if not objective:
                    self.charts_note.value = f"<div class='px-sweep-note'>{html.escape(model.note or '')}</div>"
                self._draw_views(model, figures, redraw=not first)
            return status

    def _draw_views(self, model: SweepViewModel, figures: SweepFigures, redraw: bool) -> None:
        """Each view's figures, or the model's reason where it has none (`redraw`: into its
        widget; the widgets just built already show theirs)."""
        self.last_view = model
        present = _views_of(model)
        for name in VIEWS:
            section, box, reason = self.view_sections[name], self.view_boxes[name], self.view_reasons[name]
            if name not in present:  # a view this sweep has not (the Pareto front of one objective)
                section.layout.display = "none"
                continue
            section.layout.display = None
            drawn = _figures_of(figures, name)
            if not drawn:
                why = model.missing.get(name, "nothing to draw yet")
                reason.value = f"<div class='px-sweep-missing'>{html.escape(why)}</div>"
                box.layout.display = "none"
            else:
                reason.value = ""
                box.layout.display = None
                if redraw:
                    _redraw(self.view_plots[name], drawn)

    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name=f"px-sweep-monitor-{self.sweep_id}", daemon=True)
        self._thread.start()
        live_updates.started(self)

    def stop_updates(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    @property
    def updating(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _loop(self) -> None:
        try:
            self.refresh()  # at once: the plots' first draw
        except (OSError, ValueError):
            pass
        if self.finished:
            return
        while not self._stop.wait(self.interval):
            try:
                self.refresh()
            except (OSError, ValueError):
                continue
            if self.finished:
                return

    def _stop_sweep(self) -> None:
        self.stop_button.disabled = True
        self.stop_button.description = "Stopping..."
        threading.Thread(target=self._stop_in_background, daemon=True).start()

    def _stop_in_background(self) -> None:
        try:
            self.sweep.stop()
        finally:
            self.stop_button.description = "Stop sweep"
            self.refresh()

    def show(self) -> Any:
        from IPython.display import display

        return display(self, display_id=True)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The widget, and the sweep's mimetype: JupyterLab's extension shows the sweep as the
        server knows it (live after a kernel restart, and in a reopened notebook)."""
        bundle = super()._repr_mimebundle_(**kwargs)
        if isinstance(bundle, dict):
            status = self.last_status
            bundle[SWEEP_MIMETYPE] = sweep_payload(
                self.sweep_id, name=self.sweep.record.name, state=status.state.value if status else None
            )
        return bundle
