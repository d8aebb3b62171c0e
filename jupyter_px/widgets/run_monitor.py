"""The live run monitor: state, progress, per-replica table, log tails, metric plot, buttons.

Everything it shows comes from the run store (status.json, logs/, metrics/) through the run
service, never from the backend's processes, so the same monitor works for a run started a minute ago in this kernel,
one started from the CLI, and one re-attached after a kernel restart (`%px_attach`).

Choices, and why:

* **A refresh only reads.** It observes the run (`RunService.observe`): a run whose supervisor
  (or Kubernetes follower) is gone is shown as last recorded, with that problem in the header;
  the monitor never kills, writes or starts anything to repair it (the Stop button acts, and
  `%%px_distributed --wait` / `run.wait()` keep the run).
* **Updates run in background threads**, two per monitor: one reads the state when
  status.json changes (a stat every `STATUS_POLL_S`), one metrics and logs every `interval`
  seconds (`threading.Event.wait`, so they sleep rather than spin, and `stop_updates()` wakes
  them at once); a plot that takes seconds to draw never holds back the run's state. Not an
  asyncio task on the kernel's loop: while a cell blocks (`%%px_distributed
  --wait`, or any long cell after the submit) the kernel's loop does not run, and the monitor
  must keep moving exactly then. ipywidgets 8 sends state changes from any thread (ipykernel
  routes them through its IOPub thread); a lock makes `refresh()` safe to call from the notebook
  too. The threads stop themselves when the run has finished, after one final update.
* **Bounded work per refresh.** The per-replica table is one HTML widget re-rendered from the
  status (traitlets only sends it when the text changed), not a widget per cell. Logs are read
  incrementally from the last offset and only for the replica whose log is on screen, keeping
  the last `LOG_TAIL_BYTES` (a replica printing 1 GB costs nothing more; the store's readers in
  `runstore.log_readers`). Metrics come from `MetricsReader.poll()`, which reads only appended
  bytes, and only traces that got points are redrawn.
* **Log tabs:** one tab per replica up to `MAX_LOG_TABS` replicas; beyond that a tab strip is
  unusable (and a widget per replica is what a 256-worker run must not have), so a drop-down
  picks the replica shown in a single log view.
* **The end is shown at once, then the output becomes static.** The state thread sees the
  final status.json within `STATUS_POLL_S`, so the final state reaches the browser a fraction
  of a second after the run ends, before the (slower) final plot. Then, if the monitor was shown
  with `show()` (the magics do), its output
  is replaced, same display id, by a static HTML + text view of the final state
  (`presentation.monitor.final_bundle`): a saved notebook, an export or GitHub shows the result
  instead of "model not found" (the widget mimetype wins over any fallback while it is there).
  The update goes out under the request of the cell executing at that moment (nbclient,
  papermill and jupyter-scheduler keep only those; JupyterLab routes an update by its display
  id whatever its request), else under the one that showed the monitor; one that went out
  between cells is sent again at the end of the next cell (`cell_requests`).
  `%px_attach` shows the live widget again.
* **Every output also names the run** (`run_mime`: `application/vnd.jupyter-px.run+json`, the
  live bundle and the final one): the JupyterLab extension shows the live widget while the kernel
  holds it, and otherwise the run as the server knows it now. So a notebook reopened without its
  kernel, or executed headless with a run that outlived its last cell (nbclient reads nothing
  after it, so the file keeps the live bundle), shows the run as it is, not a dead widget.
* **Saved state tells the outcome.** After the run ends, the widget state (what nbclient or
  "Save widget state" keeps in the notebook) holds every replica's final state in the table's
  HTML (`data-replica` / `data-state` on each row), the run's state in the monitor's
  `_dom_classes` (`px-state-Succeeded`), and the final plot data.
"""

from __future__ import annotations

import contextvars
import html
import threading
from typing import Any

import ipywidgets as widgets

from ..compare.changes import ChangesSince
from ..presentation.colors import state_color
from ..presentation.labels import is_tf_chief, replica_label
from ..presentation.monitor import header_html, rows_html
from ..presentation.run_view import RunViewSource
from ..presentation.view_models import RunViewModel
from ..service import ReplicaState, RunStatus
from . import live_updates
from .monitor_logs import MAX_LOG_TABS, LogViews  # noqa: F401 (MAX_LOG_TABS: the monitor's knob)
from .monitor_output import MonitorOutput

#: Metric history parsed per refresh while a long run's older points are still being loaded:
#: the newest points show at once and each refresh stays fast (about 1 MiB of JSON lines is
#: 15k points, 20-30 ms); a finished run's last refresh reads the rest.
HISTORY_BUDGET_BYTES = 1 << 20
#: The monitor's buttons' width: fixed, so that no label change moves them.
BUTTON_WIDTH = "10em"  # "TensorBoard" and its icon, whole
#: How often the update thread looks at status.json's mtime between full refreshes.
STATUS_POLL_S = 0.1


class RunMonitor(MonitorOutput, widgets.VBox):
    """A live view of one run. `RunMonitor(run)` shows it and keeps it current until it ends.

    `refresh()` does one update synchronously (tests, benchmarks, or a notebook that wants the
    latest view now) and returns the run's status; `start()` / `stop_updates()` control the
    background updates (started by default).
    """

    def __init__(self, run: Any, *, interval: float = 1.0, autostart: bool = True, **kwargs: Any):
        self.run = run
        self.service = run.service
        self.run_id = run.run_id
        self.interval = interval
        self.finished = False
        self._lock = threading.RLock()  # metrics, plot, logs
        self._status_lock = threading.RLock()  # state, bar, table
        self._stop = threading.Event()
        self._wake = threading.Event()  # the state thread saw the end: the data thread goes now
        self._threads: list[threading.Thread] = []
        self._final_done = False
        self.plot: Any = None
        self.last_status: RunStatus | None = None
        self.final_shown = False  # the output was replaced by the static final view
        self._display: Any = None
        self._context: contextvars.Context | None = None
        self._requests: Any = None  # the shell's RequestTracker once shown in a notebook
        self._final_bundle: dict[str, Any] | None = None
        self._final_in_request = False  # the final view went out inside an executing cell's request
        self._status_mtime: float | None = None
        self._tf_chief = is_tf_chief(run.record.topology)
        self.owner_problem: str | None = None  # what the last refresh found wrong with the run's owner

        self._replicas = run.service.replicas(self.run_id)
        # The run's view-model (the one every front-end shows), over the plot's own reader: the
        # reader is polled by the data thread only, both read it under `_reader_lock`.
        self._reader = run.service.metrics_reader(self.run_id, polled=False, history_budget=HISTORY_BUDGET_BYTES)
        self._reader_lock = threading.Lock()
        self._source = RunViewSource(
            run.service, self.run_id, reader=self._reader, changes=ChangesSince(run.service, run.record)
        )
        self.view: RunViewModel | None = None

        self.header = widgets.HTML()
        self.bar_state = "Pending"  # the state whose color the replica bar shows
        self.replica_bar = widgets.IntProgress(
            value=0, min=0, max=max(1, len(self._replicas)), description="replicas", layout=widgets.Layout(width="50%")
        )
        self.replica_label = widgets.HTML()
        self.step_bar = widgets.FloatProgress(
            value=0.0, min=0.0, max=1.0, description="training", layout=widgets.Layout(width="50%")
        )
        self.step_label = widgets.HTML()
        self.step_row = widgets.HBox([self.step_bar, self.step_label], layout=widgets.Layout(display="none"))
        self.pace = widgets.HTML()  # the straggler line, when one rank holds the others back
        self.table = widgets.HTML()
        self.logs = LogViews(
            run.service,
            self.run_id,
            self._replicas,
            [replica_label(role, index, self._tf_chief) for role, index in self._replicas],
        )
        self.plot_box = widgets.VBox(
            [
                widgets.HTML(
                    "<i>no metrics yet: call jupyter_px.tracking.log_metrics(step=..., total_steps=..., loss=...)"
                    " in the training code</i>"
                )
            ]
        )
        self.tabs = widgets.Tab(
            children=[self.table, self.logs.widget, self.plot_box], titles=["Replicas", "Logs", "Metrics"]
        )
        # The buttons sit in a row of their own, at fixed widths, under the header: the header's
        # elapsed time grows every second, and a button beside it would move under the pointer.
        self.stop_button = widgets.Button(
            description="Stop",
            icon="stop",
            button_style="danger",
            tooltip="stop every replica of this run (asks first)",
            layout=widgets.Layout(width=BUTTON_WIDTH),
        )
        self.tensorboard_button = widgets.Button(
            description="TensorBoard",
            icon="line-chart",
            tooltip="start (or reuse) TensorBoard for this run and show it here",
            layout=widgets.Layout(width=BUTTON_WIDTH),
        )
        # Stop asks first, as the sidebar's does: a run of many replicas is not undone by a click.
        self.confirm_stop_button = widgets.Button(
            description="Stop the run",
            button_style="danger",
            tooltip="stop every replica now",
            layout=widgets.Layout(width=BUTTON_WIDTH),
        )
        self.cancel_stop_button = widgets.Button(description="Keep running", layout=widgets.Layout(width="auto"))
        self.stop_question = widgets.HBox(
            [
                widgets.HTML(f"Stop every replica of <b>{html.escape(self.run_id)}</b>?"),
                self.confirm_stop_button,
                self.cancel_stop_button,
            ],
            layout=widgets.Layout(display="none", align_items="center"),
        )
        self.stop_question.add_class("px-stop-question")
        self.tensorboard_view = widgets.HTML()
        self.stop_button.on_click(lambda _b: self.ask_stop())
        self.confirm_stop_button.on_click(lambda _b: self._answer_stop(stop=True))
        self.cancel_stop_button.on_click(lambda _b: self._answer_stop(stop=False))
        self.tensorboard_button.on_click(lambda _b: self.show_tensorboard(background=True))
        self.button_row = widgets.HBox(
            [self.stop_button, self.tensorboard_button, self.stop_question], layout=widgets.Layout(align_items="center")
        )
        super().__init__(
            children=[
                self.header,
                self.button_row,
                widgets.HBox([self.replica_bar, self.replica_label]),
                self.step_row,
                self.pace,
                self.tabs,
                self.tensorboard_view,
            ],
            **kwargs,
        )
        self.add_class("px-run-monitor")
        self.refresh()
        if autostart:
            self.start()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The widget, and the run's mimetype (`MonitorOutput.with_run`)."""
        return self.with_run(super()._repr_mimebundle_(**kwargs))

    def __repr__(self) -> str:
        """The text a terminal, a log or an export without widget state shows."""
        status = self.last_status
        if status is None:
            return f"<RunMonitor {self.run_id}>"
        counts = ", ".join(f"{n} {state.lower()}" for state, n in status.counts().items())
        return f"<RunMonitor {self.run_id}: {status.state.value} ({counts or 'no replicas yet'})>"

    @property
    def metrics_reader(self) -> Any:
        """The `MetricsReader` behind the plot and the progress bars (its `data` is what is shown)."""
        return self._reader

    # ---- background updates ------------------------------------------------------------------
    @property
    def updating(self) -> bool:
        """Whether the background updates are running (they end by themselves after the final
        refresh of a finished run, or on `stop_updates()`)."""
        return any(thread.is_alive() for thread in self._threads)

    def start(self) -> None:
        """Update in the background until the run ends: the state as soon as status.json changes
        (looked at every `STATUS_POLL_S`), metrics and logs every `interval` seconds. Two threads,
        so drawing a large plot never delays the run's state."""
        if self.finished or self.updating:
            return
        self._stop.clear()
        self._wake.clear()
        self._threads = [
            threading.Thread(target=self._status_loop, name=f"px-monitor-state-{self.run_id}", daemon=True),
            threading.Thread(target=self._data_loop, name=f"px-monitor-data-{self.run_id}", daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        live_updates.started(self)

    def stop_updates(self) -> None:
        """Stop the background updates (the widget stays as it is)."""
        self._stop.set()
        self._wake.set()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=5)

    def close(self) -> None:
        self.stop_updates()
        super().close()

    def _status_changed(self) -> bool:
        mtime = self.service.status_changed_at(self.run_id)
        if mtime is None:
            return False
        changed, self._status_mtime = mtime != self._status_mtime, mtime
        return changed

    def _report(self, error: Exception) -> None:
        """Keep the monitor alive through a half-written file etc., and say so."""
        self.header.value = (
            self._header_html(self.last_status) + f" <small>(update failed: {html.escape(str(error))})</small>"
        )

    def _status_loop(self) -> None:
        import time

        self._status_changed()
        next_read = time.monotonic() + self.interval
        while not self._stop.wait(min(STATUS_POLL_S, self.interval)):
            if not self._status_changed() and time.monotonic() < next_read:
                continue
            next_read = time.monotonic() + self.interval
            try:
                self._update_status()
            except Exception as error:
                self._report(error)
            if self.finished:
                self._wake.set()  # the data thread does the final update now
                return

    def _data_loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval)
            if self._stop.is_set():
                return
            try:
                self._update_data()
            except Exception as error:
                self._report(error)
            if self._final_done:
                return

    # ---- one update --------------------------------------------------------------------------
    def refresh(self) -> RunStatus:
        """Read the store once and update every part; after the run ended, a last full update."""
        status = self._update_status()
        self._update_data()
        return status

    def _view(self) -> RunViewModel:
        """The run's view-model now (the observed status in `last_status`)."""
        with self._reader_lock:
            view = self.view = self._source.view()
        self.owner_problem = self._source.owner_problem
        return view

    def _update_status(self) -> RunStatus:
        """The run's state, the replica bar and table (cheap: status.json and a stat per log)."""
        with self._status_lock:
            view = self._view()
            status = self.last_status = self._source.last_status
            if status.state.finished and not self.finished:
                self.finished = True
                self._set_stop_button(enabled=False, label="Stop")
                self.stop_question.layout.display = "none"  # nothing left to stop
            self._show_status(view)
            return status

    def _update_data(self) -> None:
        """Metrics, plot and logs; once the run has ended, the final (complete) update, the
        failing replica's log, and the static final view."""
        with self._lock:
            final = self.finished and not self._final_done
            self._show_metrics(final=final)
            self.logs.refresh(everything=final)
            with self._status_lock:
                self._show_status(self._view())  # the table's step column (only what changed is sent)
            status = self.last_status
            if final and status is not None:
                self._show_failure(status)
                self._final_done = True
                self._show_final()

    def _set_stop_button(self, enabled: bool, label: str = "Stop") -> None:
        """Red and clickable while it can stop something; neutral grey (readable in both themes)
        when disabled."""
        self.stop_button.disabled = not enabled
        self.stop_button.button_style = "danger" if enabled else ""
        self.stop_button.description = label

    def _show_failure(self, status: RunStatus) -> None:
        """A failed run opens the Logs tab on the first failed replica."""
        failed = [r for r in status.replicas if r.state in (ReplicaState.FAILED, ReplicaState.LOST)]
        if not failed:
            return
        first = min(failed, key=lambda r: r.finished_at or 0)
        if (first.role, first.index) in self._replicas:
            self.logs.select(self._replicas.index((first.role, first.index)))
        self.tabs.selected_index = 1

    def _read_status(self) -> RunStatus:
        """The stored status, observed (through the view): a read that reports a gone owner and
        never repairs it."""
        self._view()
        return self._source.last_status

    def _show_status(self, view: RunViewModel) -> None:
        status = self._source.last_status
        self.header.value = self._header_html(status)
        rows = view.replicas
        total = len(rows)
        states = [row.state for row in rows]
        failed = "Failed" in states or view.state in ("Failed", "Lost")
        self.replica_bar.max = max(1, total)
        # a finished run fills the bar, so its color (red, green) is what one sees; replicas
        # still starting (no output yet) do not fill it, or "3 starting of 3" reads as done
        active = sum(row.phase not in ("starting", "Pending") and row.state in ("Running", "Succeeded") for row in rows)
        self.replica_bar.value = max(1, total) if view.finished else active
        # the state's own color (`presentation.colors`, as the sidebar's), not ipywidgets' bar
        # styles, whose "warning" orange would make Stopped look different here than elsewhere
        waiting = not view.finished and not active
        self.bar_state = "Failed" if failed else ("Pending" if waiting else view.state)
        self.replica_bar.style.bar_color = state_color(self.bar_state)
        self.replica_label.value = html.escape(view.counts)
        self.table.value = rows_html(rows)
        self.pace.value = html.escape(view.straggler or "")
        if view.progress:
            self.step_row.layout.display = "flex"
            self.step_bar.value = view.progress_fraction or 0.0
            self.step_label.value = html.escape(view.progress)
        classes = [c for c in getattr(self, "_dom_classes", ()) if not c.startswith("px-state-")]
        self._dom_classes = tuple(classes + [f"px-state-{view.state}"])

    def _header_html(self, status: RunStatus | None) -> str:
        record = self.run.record
        header = header_html(self.run_id, record.name, record.backend, status, record.created_at)
        if self.owner_problem and status is not None and not status.state.finished:
            header += f" <small class='px-owner-problem'>({html.escape(self.owner_problem)})</small>"
        return header

    # ---- metrics -----------------------------------------------------------------------------
    def _show_metrics(self, final: bool = False) -> None:
        with self._reader_lock:
            new = self._reader.poll()
            if final and self._reader.pending_history:
                new.update(self._reader.read_history())  # the finished run's plot is complete
        if new or (final and self.plot is None and self._reader.data):
            if self.plot is None:
                from .plots import LivePlot

                self.plot = LivePlot()
                self.plot_box.children = [self.plot.widget]
            self.plot.update(self._reader.data, new.keys())
        if final and self.plot is not None:
            self.plot.finalize()

    # ---- buttons -----------------------------------------------------------------------------
    def ask_stop(self) -> None:
        """The Stop button: ask before stopping (the question's buttons answer)."""
        if self.finished:
            return
        self.stop_question.layout.display = "flex"

    def _answer_stop(self, stop: bool) -> None:
        self.stop_question.layout.display = "none"
        if stop and not self.finished:
            self.stop_run()

    def stop_run(self) -> None:
        """Stop every replica now (the Stop button, once confirmed)."""
        self._set_stop_button(enabled=False, label="Stopping")
        try:
            self.run.stop()
        except Exception as error:
            self._set_stop_button(enabled=True)
            self.header.value = (
                self._header_html(self.last_status) + f" <small>(stop failed: {html.escape(str(error))})</small>"
            )
            return
        self.refresh()

    def show_tensorboard(self, background: bool = True) -> None:
        """Start (or reuse) TensorBoard for this run and embed it (the TensorBoard button).

        Starting TensorBoard takes seconds; the button does it in a thread so the kernel stays
        responsive (a click is handled on the kernel's shell thread)."""
        self.tensorboard_button.disabled = True
        self.tensorboard_view.value = "<i>starting TensorBoard...</i>"

        def start() -> None:
            from ..presentation.html import tensorboard_html

            try:
                result = self.run.service.tensorboard([self.run_id])
                self.tensorboard_view.value = tensorboard_html(result, label=self.run_id)
                if self.final_shown:  # the run ended meanwhile: its final view gets the TensorBoard too
                    self._resend_final()
            except Exception as error:  # shown where the user looks, not lost in a thread
                self.tensorboard_view.value = f"<pre>TensorBoard could not start: {html.escape(repr(error))}</pre>"
            finally:
                self.tensorboard_button.disabled = False

        if background:
            threading.Thread(target=start, name=f"px-tensorboard-{self.run_id}", daemon=True).start()
        else:
            start()
