"""How the run monitor is shown in a notebook, and replaced by its final view when the run ends.

The monitor is displayed with a display id; when the run ends its output is replaced, same
display id, by a static HTML + text view of the final state (`presentation.monitor.final_bundle`):
a saved notebook, an export or GitHub shows the result instead of "model not found". The update
goes out under the request of the cell executing at that moment (nbclient, papermill and
jupyter-scheduler keep only those; JupyterLab routes an update by its display id whatever its
request), else under the one that showed the monitor; one that went out between cells is sent
again at the end of the next cell (`cell_requests`). Every output also names the run (`run_mime`),
which the JupyterLab extension renders as the run's live view.
"""

from __future__ import annotations

import contextvars
from typing import Any

from ..presentation.labels import ReplicaNames
from ..presentation.monitor import FINAL_LOG_BYTES, FinalView, final_bundle
from .run_mime import MIMETYPE, run_payload


class MonitorOutput:
    """The display half of `RunMonitor` (a mixin: the monitor's state is its own)."""

    # Set by the monitor.
    run: Any
    run_id: str
    service: Any
    finished: bool
    final_shown: bool
    last_status: Any
    tensorboard_view: Any
    _display: Any
    _context: contextvars.Context | None
    _requests: Any
    _final_bundle: dict[str, Any] | None
    _final_in_request: bool
    _final_done: bool
    _lock: Any
    _reader: Any
    _replicas: list[tuple[str, int]]
    logs: Any
    view: Any

    def _view(self) -> Any:  # the monitor's
        raise NotImplementedError

    def _read_status(self) -> Any:  # the monitor's
        raise NotImplementedError

    def _update_status(self) -> Any:  # the monitor's
        raise NotImplementedError

    def _update_data(self) -> None:  # the monitor's
        raise NotImplementedError

    def show(self) -> Any:
        """Display the monitor in the notebook, keeping its display id, so that the output can be
        replaced by the static final view when the run ends (see the module docstring). A run
        that had already ended keeps the live widget: that is what `%px_attach` asked for."""
        from IPython.display import display

        # The fallback request of the final update when no cell executes (see `cell_requests`):
        # ipykernel keeps the parent request in a context variable.
        self._context = contextvars.copy_context()
        self._display = display(self, display_id=True)
        from IPython import get_ipython

        shell = get_ipython()
        if shell is not None and hasattr(shell, "events"):
            from .cell_requests import tracker

            self._requests = tracker(shell)
            self._requests.watch(self)
        return self._display

    def at_cell_end(self) -> None:
        """At the end of every cell (the shell's thread, inside that cell's request): a run that
        has ended gets its final view now, and a final view that went out between cells is sent
        again, so a notebook executed headless keeps it (see `cell_requests`)."""
        if self._display is None or self._final_in_request:
            return
        if not self.finished:
            try:  # the stored status only (a read of status.json): a cell's end stays cheap
                ended = self.service.status(self.run_id).state.finished
            except Exception:
                return
            if not ended:
                return
            self._update_status()
        with self._lock:
            if not self._final_done:
                self._update_data()
            if self.final_shown and not self._final_in_request:
                self._send_final()

    def with_run(self, bundle: Any) -> Any:
        """The widget's bundle and the run's mimetype (`run_mime`): in JupyterLab the extension
        shows the run as it is now (the live view is its own), everywhere else the widget."""
        if isinstance(bundle, dict):
            if not self.finished:  # never a stale state in a saved text/plain
                bundle["text/plain"] = (
                    f"<RunMonitor {self.run_id}: live monitor; %px_status {self.run_id} shows the run's state>"
                )
            bundle[MIMETYPE] = self._payload(final=False)
        return bundle

    def _payload(self, final: bool, tensorboard: bool = False) -> dict[str, Any]:
        record = self.run.record
        return run_payload(
            self.run_id,
            name=record.name,
            backend=record.backend,
            created_at=record.created_at,
            status=self.last_status,
            final=final,
            tensorboard=tensorboard,
        )

    def _final_output(self) -> dict[str, Any]:
        """The final view's bundle: the static HTML + SVG and text, and the run's mimetype."""
        view = self.final_view()
        return {**final_bundle(view), MIMETYPE: self._payload(final=True, tensorboard=bool(view.tensorboard))}

    def final_view(self) -> FinalView:
        """The run's final state as the static view shows it."""
        status = self.last_status or self._read_status()
        view = self.view or self._view()
        logs = {}
        for (role, index), tail in zip(self._replicas, self.logs.tails, strict=False):
            tail.poll()
            logs[f"{role}-{index}"] = tail.text[-FINAL_LOG_BYTES:]
        return FinalView(
            run_id=self.run_id,
            name=self.run.record.name,
            backend=self.run.record.backend,
            created_at=self.run.record.created_at,
            status=status,
            rows=list(view.replicas),
            metrics=self._reader.data if self._reader is not None else {},
            straggler=view.straggler or "",
            names=ReplicaNames.of(self.run.record.topology),
            logs=logs,
            tensorboard=self.tensorboard_view.value if "class='px-tensorboard'" in self.tensorboard_view.value else "",
        )

    def _show_final(self) -> None:
        """Replace the output (same display id) by the static final view; once."""
        if self._display is None or self.final_shown:
            return
        self.final_shown = True
        self._final_bundle = self._final_output()
        self._send_final()

    def _resend_final(self) -> None:
        """The final view again, rebuilt (what it shows changed after it was sent)."""
        with self._lock:
            self._final_bundle = self._final_output()
            self._final_in_request = False
            if self._requests is not None:
                self._requests.watch(self)
            self._send_final()

    def _send_final(self) -> None:
        """Send the final view under the executing cell's request if one runs, else under the
        request that showed the monitor (see `cell_requests`)."""
        display, bundle = self._display, self._final_bundle
        if display is None or bundle is None:
            return

        def update() -> None:
            display.update(bundle, raw=True)

        if self._requests is None:
            (self._context.copy() if self._context is not None else contextvars.copy_context()).run(update)
            return
        if self._requests.send(update, self._context):
            self._final_in_request = True
            self._requests.unwatch(self)
