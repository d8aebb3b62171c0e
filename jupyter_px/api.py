"""The public Python API: a thin layer over the run service (`jupyter_px.service.RunService`).

run = jupyter_px.submit("train.py", topology)      # or code text, or a typed source
run.wait(); run.status(); run.logs("worker", 0); run.metrics(); run.stop(); run.tensorboard()
run = jupyter_px.Run("last")                       # or a run id, or a run name (its newest run)
run = jupyter_px.submit(train, topology, args=(0.1,), kwargs={"epochs": 3})   # a function
run.results()                                      # what each replica returned, in rank order
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .runstore import RunState, RunStatus, RunStore
from .service import (
    LOGS_TAIL_BYTES,
    Backend,
    CodeSource,
    FunctionCall,
    NotebookCells,
    Observation,
    Overrides,
    PushError,
    ReplicaState,
    RunService,
    ScriptFile,
    SourceText,
    Submission,
)
from .topology import Topology, parse_topology
from .topology.naming import ReplicaNames


class RunFailed(RuntimeError):
    """`wait(check=True)` on a run that did not succeed; carries its final status. Its message
    names replicas as the job calls them (`names`: a TensorFlow master is `chief`)."""

    def __init__(self, status: RunStatus, names: ReplicaNames | None = None):
        from .run_text import failure_text

        self.status = status
        super().__init__(failure_text(status, one_line=True, names=names))


def submit(
    code: str | os.PathLike | CodeSource | Callable[..., Any],
    topology: Topology | str | dict | None = None,
    *,
    name: str | None = None,
    backend: str | None = None,
    framework: str | None = None,
    workers: int | None = None,
    ps: int | None = None,
    workdir: str | os.PathLike | None = None,
    args: Sequence[Any] = (),
    kwargs: Mapping[str, Any] | None = None,
    language: str | None = None,
    push: Mapping[str, Any] | None = None,
    submitted_from: str = "api",
    source: str | None = None,
    store: RunStore | None = None,
    cold: bool = False,
) -> Run:
    """Validate, record and start a run; returns at once (call `.wait()` to block).

    `code` is a typed source (`ScriptFile`, `SourceText`, `NotebookCells` from
    `jupyter_px.service`), or, decided once by `code_source`: a path (or one line ending in
    `.py`) is a script, other text is code. `source` records where the code came from;
    `language` ("python", or "ipython" for %magics and !commands) overrides the source's.
    Nothing is left behind when validation, the backend's resource check or the start fails.

    `code` may be a function (or a lambda) instead: every replica calls `code(*args, **kwargs)`
    with the run's environment; it and the notebook globals it uses are shipped by value
    (cloudpickle), and `run.results()` gives what each replica returned.
    """
    if callable(code) and not isinstance(code, (str, os.PathLike, ScriptFile, SourceText, NotebookCells, FunctionCall)):
        from .code.kernel import function_cells

        code = FunctionCall(code, tuple(args), dict(kwargs or {}), function_cells(code))
        args = ()
    elif kwargs:
        raise TypeError("kwargs are a function's keyword arguments: submit a function to use them")
    overrides = Overrides(framework=framework, workers=workers, ps=ps, backend=backend)
    if topology is None:  # the notebook's, as %%px_distributed uses; else the overrides alone, else say so
        topology = _current_topology()
        if topology is None and not overrides.any:
            raise NoTopology(NO_TOPOLOGY)
    submission = Submission.of_code(
        code,
        topology_source(topology),
        overrides,
        name=name,
        workdir=workdir,
        args=args,
        language=language,
        push=push,
        submitted_from=submitted_from,
        source=source,
        cold=cold,
    )
    service = RunService(store)
    return Run(service.submit(submission), service=service)


class NoTopology(ValueError):
    """`submit` without a topology where the notebook has none either."""


#: What `submit` says when it has no topology to run: what it needs and the ways to give one.
NO_TOPOLOGY = (
    "jupyter_px.submit: no topology: pass one (submit(fn, topology) with a Topology, its YAML text or "
    "a dict), or define the notebook's with a %%px_topology cell first, as %%px_distributed uses"
)


def _current_topology() -> Topology | None:
    """The notebook's current topology (the last `%%px_topology` or form save in this kernel):
    what `submit` uses when given none, as `%%px_distributed` does."""
    from .topology.registry import topologies

    return topologies.current


#: How a topology file's name ends (a one-line string ending so is a path, not YAML).
TOPOLOGY_SUFFIXES = (".yaml", ".yml", ".json")


def topology_source(topology: Topology | str | os.PathLike | dict | None) -> Topology | str | dict | None:
    """The topology `submit` was given, with a path read as its file: a `Path`, or a one-line
    string that names an existing file (relative to the working directory, or absolute) or ends
    in .yaml/.yml/.json; other text is YAML. FileNotFoundError names a topology file that is not there."""
    from .topology.files import read_topology_text

    if isinstance(topology, os.PathLike):
        return read_topology_text(topology)
    if isinstance(topology, str) and topology.strip() and "\n" not in topology.strip():
        path = os.path.expanduser(topology.strip())
        if os.path.isfile(path):
            return read_topology_text(path)
        if path.endswith(TOPOLOGY_SUFFIXES):
            raise FileNotFoundError(f"topology file {topology!r} does not exist (in {os.getcwd()})")
    return topology


def runs(store: RunStore | None = None, limit: int | None = None) -> list[Run]:
    """Every run in the store, newest first (runs started from magics, the CLI or this API)."""
    service = RunService(store)
    return [Run(view.record.run_id, service=service) for view in service.list_runs(limit=limit)]


class Run:
    """A handle on one run in the store. Cheap to create; every call reads the store afresh.

    `ref` is what the user called the run: its id, its name (the newest run of that name) or
    `last` (RunNotFound otherwise; RunDamaged when its record cannot be read).
    """

    def __init__(self, ref: str, store: RunStore | None = None, *, service: RunService | None = None):
        self.service = service or RunService(store)
        self.run_id = self.service.resolve(ref)
        self.record = self.service.record(self.run_id)

    def __repr__(self) -> str:
        """The stored state, and what is wrong with the run's owner: a pure read (a repr never
        reconciles, kills or writes)."""
        observation = self.observe()
        problem = f"; {observation.owner_problem}" if observation.owner_problem else ""
        return f"<Run {self.run_id} {observation.status.state.value}{problem}>"

    @property
    def paths(self):
        return self.service.paths(self.run_id)

    @property
    def params(self) -> dict[str, Any]:
        """The trial's values when this run is a trial of a sweep, else {}."""
        return dict(self.record.sweep.params) if self.record.sweep else {}

    @property
    def topology(self) -> Topology:
        return parse_topology(self.record.topology)

    @property
    def backend(self) -> Backend:
        return self.service.backend_of(self.run_id)

    def status(self) -> RunStatus:
        """The run's stored status: a pure read (no process is checked, nothing is written)."""
        return self.service.status(self.run_id)

    def observe(self) -> Observation:
        """The stored status and a report on the run's owner ("the supervisor (pid 123) is
        gone"): a pure read, like `status()`."""
        return self.service.observe(self.run_id)

    def replicas(self) -> list[tuple[str, int]]:
        """The run's replicas as (role, index)."""
        return self.service.replicas(self.run_id)

    def reconcile(self) -> RunStatus:
        """Keep the run: the status after the backend has checked what it can observe (a dead
        supervisor makes the run Lost, a Kubernetes run nobody follows is followed again); may
        write the store and kill leftovers."""
        return self.service.keep(self.run_id)

    def wait(self, timeout: float | None = None, check: bool = False, poll: float = 0.25) -> RunStatus:
        """Block until the run has finished, keeping it (see `reconcile`); with check, raise
        RunFailed unless it succeeded."""
        status = self.service.wait(self.run_id, timeout=timeout, poll=poll)
        if check and status.state != RunState.SUCCEEDED:
            raise RunFailed(status, ReplicaNames.of(self.record.topology))
        return status

    def logs(self, role: str = "master", index: int = 0, tail: int | None = LOGS_TAIL_BYTES) -> str:
        """A replica's log text: the last `tail` bytes (1 MiB by default, so a run that printed
        gigabytes does not fill the kernel's memory); `tail=None` for the whole log. A TensorFlow
        master's role may be given as `chief`, as its job calls it."""
        role = ReplicaNames.of(self.record.topology).stored_role(role)
        return self.service.log_tail(self.run_id, role, index, tail)

    def metrics(self):
        """All tracked metrics: {replica key: {metric: Series(steps, values, times)}}."""
        return self.service.metrics(self.run_id)

    def stop(self) -> RunStatus:
        return self.service.stop(self.run_id)

    def stacks(self, take: bool = True) -> dict[str, Any]:
        """Every replica's Python stacks, grouped by identical stack, your code's frames named by
        notebook cell (`text` says it in a line per group): asked now while the run runs (`take`),
        else the newest snapshot kept in the run. As `jupyter px stacks RUN`."""
        return self.service.stacks(self.run_id, take=take)

    def results(self, timeout: float | None = None) -> list[Any]:
        """What each replica returned, in rank order (master first, then workers by index; each
        replica's processes by rank), once the run has finished (it is waited for, kept as
        `wait` keeps it). A replica's exception is raised again, its traceback attached as the
        cause; a replica that returned nothing (killed, stopped) raises ResultMissing, and one that
        succeeded through `sys.exit(0)` or `os._exit(0)` before giving a value gives None. For
        runs of a function (`submit(fn, ...)`) or of a cell that ends with an expression."""
        from .code.function_calls import read_results

        status = self.wait(timeout=timeout)
        by_key = {replica.key: replica for replica in status.replicas}
        per_replica = self.topology.environment.processes_per_replica if self.topology.framework == "pytorch" else 1
        processes = [
            (role, index, f"{role}-{index}" + (f".rank{rank}" if rank else ""))
            for role, index in self.replicas()
            for rank in range(per_replica)
        ]

        def why_missing(key: str) -> str:
            replica = by_key.get(key.split(".rank")[0])
            if replica is None:
                return "it has no status"
            return f"it {replica.state.value}" + (f": {replica.message}" if replica.message else "")

        def blame(key: str) -> int:  # a replica that failed or was lost, before those stopped after it
            replica = by_key.get(key.split(".rank")[0])
            return 1 if replica is None or replica.state == ReplicaState.STOPPED else 0

        def succeeded(key: str) -> bool:  # it ended through sys.exit(0) / os._exit(0): no value, no error
            replica = by_key.get(key.split(".rank")[0])
            return replica is not None and replica.state == ReplicaState.SUCCEEDED

        return read_results(self.paths.root, processes, why_missing, blame, succeeded)

    def tensorboard(self, **kwargs):
        """Start (or reuse) a TensorBoard for this run; returns the typed start result."""
        return self.service.tensorboard([self.run_id], **kwargs)


__all__ = ["PushError", "Run", "RunFailed", "runs", "submit"]
