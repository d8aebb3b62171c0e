"""The Python API behind the magics, widgets, CLI and REST handlers.

run = jupyter_px.submit("train.py", topology)      # or code text
run.wait(); run.status(); run.logs("worker", 0); run.metrics(); run.stop(); run.tensorboard()
run = jupyter_px.Run("last")                       # or a run id, or a run name (its newest run)
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
        from .run_text import failure_text

        self.status = status
        super().__init__(failure_text(status, one_line=True))


class PushError(ValueError):
    """A value named in --push cannot be shipped to the replicas."""


def _code_from(code: str | os.PathLike) -> tuple[str, str, str]:
    """(source text, entrypoint file name, where it came from).

    A script is decoded as Python itself would (PEP 263: a `# -*- coding: latin-1 -*-` line, a
    UTF-8 byte order mark, else UTF-8), and stored as UTF-8; so its coding line, if any, is
    rewritten to say utf-8 (same line, same line numbers), or Python would decode the stored
    bytes as the old encoding. A script that does not decode is refused, naming the file.
    """
    import io
    import re
    import tokenize

    if isinstance(code, os.PathLike) or (isinstance(code, str) and "\n" not in code and code.endswith(".py")):
        path = Path(code)
        if not path.is_file():
            raise FileNotFoundError(f"script {str(path)!r} does not exist")
        data = path.read_bytes()
        hint = "save it as UTF-8 or declare its encoding on its first line (# -*- coding: latin-1 -*-)"
        try:
            encoding, first_lines = tokenize.detect_encoding(io.BytesIO(data).readline)
            declared = None
        except SyntaxError as error:  # an unknown encoding, or bytes in the first lines that are not UTF-8
            encoding, first_lines, declared = "utf-8", [], error.msg
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError as error:
            raise ValueError(
                f"script {str(path)!r} is not {error.encoding} text "
                f"(byte {data[error.start]:#04x} at offset {error.start}); {hint}"
            ) from None
        if declared is not None:
            raise ValueError(f"script {str(path)!r}: {declared}; {hint}")
        if encoding.lower() not in ("utf-8", "utf-8-sig"):
            lines = text.splitlines(keepends=True)
            cookie = re.compile(r"^([ \t\f]*#.*?coding[:=][ \t]*)([-\w.]+)")
            for number in range(min(len(first_lines), len(lines))):
                if cookie.match(lines[number]):
                    lines[number] = cookie.sub(r"\g<1>utf-8", lines[number], count=1)
                    break
            text = "".join(lines)
        return text, path.name, str(path.resolve())
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
    """Every run in the store, newest first (runs started from magics, the CLI or this API)."""
    store = store or RunStore()
    return [Run(record.run_id, store) for record, _ in store.list(limit=limit)]


#: What `Run.logs()` returns unless asked for more: the end of the log, where errors are.
LOGS_TAIL_BYTES = 1 << 20


class Run:
    """A handle on one run in the store. Cheap to create; every call reads the store afresh.

    `ref` is what the user called the run: its id, its name (the newest run of that name) or
    `last` (RunNotFound otherwise; RunDamaged when its record cannot be read).
    """

    def __init__(self, ref: str, store: RunStore | None = None):
        self.store = store or RunStore()
        self.run_id = self.store.resolve(ref)
        self.record = self.store.record(self.run_id)

    def __repr__(self) -> str:
        """The stored state: a pure read (a repr never reconciles, kills or writes)."""
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

    def logs(self, role: str = "master", index: int = 0, tail: int | None = LOGS_TAIL_BYTES) -> str:
        """A replica's log text: the last `tail` bytes (1 MiB by default, so a run that printed
        gigabytes does not fill the kernel's memory); `tail=None` for the whole log."""
        if tail is not None and tail <= 0:
            raise ValueError(f"tail must be a positive number of bytes or None, got {tail!r}")
        # A negative offset starts `tail` bytes before the end, at a character boundary.
        first, offset = self.store.read_log(self.run_id, role, index, offset=-tail if tail else 0)
        rest = (text for text, _ in self.store.iter_log(self.run_id, role, index, offset=offset))
        return first + "".join(rest)

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
