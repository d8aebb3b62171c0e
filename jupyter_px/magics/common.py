"""What several magics do the same way: find a run, show it, wait for it."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics

from ..presentation.labels import ReplicaNames
from ..presentation.text import failure_text, topology_problems

#: Where to read a failed replica's log, in a failed run's one-line error.
LOGS_HINT = "%px_logs {run_id} --role {role} --index {index}"


def shell_of(magics: Magics) -> InteractiveShell:
    """The shell a magics instance is registered with (IPython types it as optional)."""
    if magics.shell is None:
        raise UsageError("jupyter-px magics need an IPython shell: %load_ext jupyter_px")
    return magics.shell


def in_kernel(shell: Any) -> bool:
    """Whether outputs go to a notebook front end (widgets render) rather than a terminal."""
    return getattr(shell, "kernel", None) is not None


def cell_id(shell: Any) -> str | None:
    """The id of the notebook cell being executed, when the front end sent it (JupyterLab,
    Notebook 7 and nbclient put it in the execute request's metadata): a run records it, so its
    view can say what changed since the previous run of the same cell."""
    kernel = getattr(shell, "kernel", None)
    try:
        parent = kernel.get_parent() if kernel is not None else None
    except Exception:  # an old kernel, or none: the run just has no cell
        return None
    value = ((parent or {}).get("metadata") or {}).get("cellId")
    return value if isinstance(value, str) and 0 < len(value) <= 200 else None


def run_service() -> Any:
    """The run service over the store; a UsageError (one line) when the store cannot be one
    (`PX_HOME` names a file)."""
    from ..service import RunService, StoreUnusable

    try:
        return RunService()
    except StoreUnusable as error:
        raise UsageError(str(error)) from None


def open_run(ref: str) -> Any:
    """The Run the user means: an id, a name (its newest run) or `last`; a UsageError otherwise."""
    from ..api import Run
    from ..service import RunDamaged, RunNotFound

    service = run_service()
    try:
        run = Run(ref, service=service)
        run.status()  # a damaged status is reported here, as one line, not mid-way through a magic
        return run
    except RunNotFound:
        raise UsageError(
            f"unknown run {ref!r} (no such run id or name in {service.root}; %px_runs lists them)"
        ) from None
    except RunDamaged as error:
        raise UsageError(str(error)) from None


def cell_submission(source: Any, topology: Any, name: str | None, push: dict[str, Any], *, cold: bool = False) -> Any:
    """What `%%px_distributed` submits, a run or a sweep: the cell's code as the kernel ships it
    (`code.kernel.cell_code`: its text, where it came from, its language, where its lines came
    from, whether its last expression is each replica's result), run in the kernel's working
    directory (`cold`: every replica started afresh)."""
    from ..service import Submission

    return Submission(source, topology, name=name, push=push or None, origin="magic", workdir=os.getcwd(), cold=cold)


@contextlib.contextmanager
def submit_errors() -> Iterator[None]:
    """A submit's refusal (bad topology, an unshippable --push, the backend saying no, an
    invalid --name) as one UsageError line: the user's input was wrong, not the magic."""
    from ..service import BackendError, PushError
    from ..topology import TopologyError

    try:
        yield
    except TopologyError as error:
        raise UsageError(topology_problems(error)) from None
    except PushError as error:
        raise UsageError(f"--push: {error}") from None
    except (BackendError, ValueError) as error:  # ValueError: e.g. an invalid --name
        raise UsageError(f"not submitted: {error}") from None


def show_run(shell: Any, run: Any, terminal_line: str) -> Any:
    """The live monitor in a notebook (returned); `terminal_line` in a terminal (None)."""
    if in_kernel(shell):
        from ..widgets.run_monitor import RunMonitor

        monitor = RunMonitor(run)
        monitor.show()  # with a display id: the final state replaces the widget when the run ends
        return monitor
    print(terminal_line)
    return None


def wait_for_run(run: Any, monitor: Any, timeout: float | None) -> None:
    """Block until the run ends; a UsageError (one line, naming the failed replica and where its
    log is) unless it succeeded. Ctrl-C stops the waiting, not the run."""
    from ..service import RunState

    try:
        status = run.wait(timeout=timeout)
    except KeyboardInterrupt:  # the monitor keeps updating: only the waiting stops
        print(f"stopped waiting; run {run.run_id} goes on (%px_stop {run.run_id} stops it)", file=sys.stderr)
        return
    except TimeoutError as error:
        raise UsageError(f"{error}; it goes on (%px_stop {run.run_id} stops it)") from None
    if monitor is not None:
        monitor.stop_updates()
        status = monitor.refresh()  # the final state, in the widget before the cell ends
    if status.state != RunState.SUCCEEDED:
        raise UsageError(failure_text(status, LOGS_HINT, one_line=True, names=ReplicaNames.of(run.record.topology)))
    if monitor is None:
        print(f"run {run.run_id} {status.state.value}")
