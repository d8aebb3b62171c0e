"""The Python API behind the magics, widgets, CLI and REST handlers.

run = jupyter_px.submit("train.py", topology)      # or code text
run.wait(); run.status(); run.logs("worker", 0); run.metrics(); run.stop(); run.tensorboard()
"""

from __future__ import annotations

import os
import pickle
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .backends import Backend, get_backend
from .runstore import CodeSpec, RunRecord, RunState, RunStatus, RunStore, new_run_id
from .topology import Topology, apply_overrides, parse_topology, to_dict


class RunFailed(RuntimeError):
    """`wait(check=True)` on a run that did not succeed; carries its final status."""

    def __init__(self, status: RunStatus):
        self.status = status
        bad = [r for r in status.replicas if r.state.value in ("Failed", "Lost")]
        detail = "; ".join(
            f"{r.key}: {r.reason or r.state.value}"
            + (f" (exit code {r.exit_code})" if r.exit_code is not None else "")
            + (f" {r.message}" if r.message else "")
            for r in bad
        )
        super().__init__(
            f"run {status.run_id} {status.state.value}"
            + (f": {status.message}" if status.message else "")
            + (f" [{detail}]" if detail else "")
        )


class PushError(ValueError):
    """A value named in --push cannot be shipped to the replicas."""


def _code_from(code: str | os.PathLike) -> tuple[str, str, str]:
    """(source text, entrypoint file name, where it came from)."""
    if isinstance(code, os.PathLike) or (isinstance(code, str) and "\n" not in code and code.endswith(".py")):
        path = Path(code)
        if not path.is_file():
            raise FileNotFoundError(f"script {str(path)!r} does not exist")
        return path.read_text(), path.name, str(path.resolve())
    if not isinstance(code, str):
        raise TypeError(f"code must be Python source text or a path to a .py file, got {type(code).__name__}")
    return code, "main.py", "code"


def _pickle_pushed(values: Mapping[str, Any]) -> bytes:
    for name, value in values.items():
        try:
            pickle.dumps(value)
        except Exception as error:  # pickle raises many types (TypeError, PicklingError, AttributeError...)
            raise PushError(f"cannot ship {name!r} ({type(value).__name__}) to the replicas: {error}") from None
    return pickle.dumps(dict(values))


def submit(
    code: str | os.PathLike,
    topology: Topology | str | dict | None = None,
    *,
    name: str | None = None,
    backend: str | None = None,
    framework: str | None = None,
    workers: int | None = None,
    ps: int | None = None,
    workdir: str | os.PathLike | None = None,
    args: list[str] | tuple[str, ...] = (),
    language: str = "python",
    push: Mapping[str, Any] | None = None,
    submitted_from: str = "api",
    source: str | None = None,
    store: RunStore | None = None,
) -> Run:
    """Validate, record and start a run; returns at once (call `.wait()` to block).

    Nothing is left behind when validation, the backend's resource check or the start fails.
    `source` records where code text came from (the magics pass "cell" or "notebook:<path>").
    """
    topo = parse_topology(topology) if topology is not None else None
    if topo is None or any(v is not None for v in (framework, workers, ps, backend)):
        topo = apply_overrides(topo, framework=framework, workers=workers, ps=ps, backend=backend)
    text, entrypoint, origin = _code_from(code)
    store = store or RunStore()
    chosen: Backend = get_backend(topo.backend_kind, store)
    chosen.check(topo)
    files: dict[str, bytes | str] = {entrypoint: text}
    if push:
        files["pushed.pkl"] = _pickle_pushed(push)
    run_id = new_run_id(name)
    record = RunRecord(
        run_id=run_id,
        name=name,
        backend=topo.backend_kind,
        topology=to_dict(topo),
        code=CodeSpec(
            entrypoint=entrypoint,
            language=language,
            args=list(args),
            source=source or origin,
            pushed=sorted(push or {}),
        ),
        workdir=str(Path(workdir or os.getcwd()).resolve()),
        submitted_from=submitted_from,
    )
    store.create(record, files)
    try:
        chosen.submit(run_id)
    except BaseException:
        store.delete(run_id)
        raise
    return Run(run_id, store)


def runs(store: RunStore | None = None, limit: int | None = None) -> list[Run]:
    """Every run in the store, newest first (runs started from magics, the CLI or the sidebar)."""
    store = store or RunStore()
    return [Run(record.run_id, store) for record, _ in store.list(limit=limit)]


class Run:
    """A handle on one run in the store. Cheap to create; every call reads the store afresh."""

    def __init__(self, run_id: str, store: RunStore | None = None):
        self.store = store or RunStore()
        self.run_id = run_id
        self.record = self.store.record(run_id)

    def __repr__(self) -> str:
        return f"<Run {self.run_id} {self.status().state.value}>"

    @property
    def paths(self):
        return self.store.paths(self.run_id)

    @property
    def topology(self) -> Topology:
        return parse_topology(self.record.topology)

    @property
    def backend(self) -> Backend:
        return get_backend(self.record.backend, self.store)

    def status(self) -> RunStatus:
        """The run's stored status: a pure read (no process is checked, nothing is written)."""
        return self.backend.status(self.run_id)

    def reconcile(self) -> RunStatus:
        """The status after the backend has checked what it can observe (a dead supervisor
        makes the run Lost); may write the store."""
        return self.backend.reconcile(self.run_id)

    def wait(self, timeout: float | None = None, check: bool = False, poll: float = 0.25) -> RunStatus:
        """Block until the run has finished; with check, raise RunFailed unless it succeeded."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            status = self.reconcile()
            if status.state.finished:
                if check and status.state != RunState.SUCCEEDED:
                    raise RunFailed(status)
                return status
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"run {self.run_id} still {status.state.value} after {timeout} s")
            time.sleep(poll)

    def logs(self, role: str = "master", index: int = 0, tail: int | None = None) -> str:
        """A replica's log text (the last `tail` bytes if given)."""
        text, _ = self.store.read_log(self.run_id, role, index, offset=-tail if tail else 0)
        return text

    def metrics(self):
        """All tracked metrics: {replica key: {metric: Series(steps, values, times)}}."""
        from .runstore.metrics import MetricsReader

        reader = MetricsReader(self.paths)
        reader.poll()
        return reader.data

    def stop(self) -> RunStatus:
        self.backend.stop(self.run_id)
        return self.status()

    def tensorboard(self, **kwargs):
        """Start (or reuse) a TensorBoard for this run; returns the typed start result."""
        from . import tensorboard

        return tensorboard.start([self.run_id], **kwargs)
