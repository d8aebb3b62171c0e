"""The one interface every backend implements.

A backend turns a published run directory (record + code, see `jupyter_px.runstore`) into running
replicas and writes what it learns (states, exit codes, logs, metrics) back into the run store.
UIs never talk to a backend's processes or API server: they read the store. So a backend has eight
verbs, and must write only two of them (`submit` and `stop`): `check` (refuse before anything is
created), `submit`, `stop`; the reads `status`, `observe` and `logs`, which read the store by
default and never act; `reconcile`, the one verb that brings the store in line with what the
backend sees, called only by explicit keepers; and `clean`, which removes what a finished run
left outside the store (nothing, by default).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..runstore import ReplicaState, ReplicaStatus, RunStatus, RunStore
from ..topology import Topology


class BackendError(RuntimeError):
    """The backend cannot do what was asked; the message says why and what to change."""


class RunLeftBehind(BackendError):
    """Starting the run failed and undoing it could not be confirmed: something of it may remain
    (e.g. objects on a cluster). The run's record is kept, Failed with a message that says what
    and how to remove it (`stop` tries again), so it can be found and cleaned, never forgotten."""


class ResourceUnavailable(BackendError):
    """The topology asks for more than the backend can give (e.g. 4 GPUs on a 1-GPU machine)."""


@dataclass(frozen=True)
class Observation:
    """What a read sees of a run: its stored status, and whether the run's lifecycle owner (the
    local supervisor, the Kubernetes follower) is there to keep that status true.

    A read never repairs what it sees: `owner_problem` *reports* "the supervisor (pid 123) is
    gone" or "nobody is following this run"; only the owner, or an explicit keeper
    (`Backend.reconcile`), changes the status.
    """

    status: RunStatus
    owner_problem: str | None = None


@dataclass(frozen=True)
class SubmitHandle:
    """What submit() learned: enough to find the run's processes or objects again."""

    run_id: str
    backend: str
    detail: dict


@dataclass(frozen=True)
class Rendered:
    """What a submit would create (a dry run, from the backend row's `render`): for which backend,
    the objects (Kubernetes manifests; none for a backend of scripts), the text to read (YAML, a
    batch script, the ssh commands), and what applying them needs told."""

    backend: str
    objects: list[dict[str, Any]]
    yaml: str
    warnings: list[str]


class Backend(ABC):
    name: str = ""

    def __init__(self, store: RunStore | None = None):
        self.store = store or RunStore()

    def check(self, topology: Topology) -> None:
        """Raise ResourceUnavailable/BackendError before anything is created. Default: accept."""
        return None

    @abstractmethod
    def submit(self, run_id: str) -> SubmitHandle:
        """Start the run whose directory is already published in the store."""

    def submit_array(self, run_ids: list[str], concurrency: int, label: str) -> list[SubmitHandle]:
        """Start recorded runs of one shape together, at most `concurrency` at once, as one
        scheduler record (its row's `job_arrays`); `label` names it. BackendError when they cannot
        be (the caller then submits them one by one)."""
        raise BackendError(f"the {self.name} backend has no job arrays")

    def status(self, run_id: str) -> RunStatus:
        """The run's status as last written by the backend. A pure read: it never writes or kills,
        so reprs, monitors and listings can call it freely."""
        return self.store.status(run_id)

    def observe(self, run_id: str) -> Observation:
        """The stored status and a report on the run's owner. A pure read, like `status`: it
        never writes, kills or starts anything. Backends with an owner to check override it."""
        return Observation(self.status(run_id))

    def reconcile(self, run_id: str) -> RunStatus:
        """Bring the stored status in line with what the backend can observe (e.g. a dead
        supervisor makes the run Lost; an unfollowed Kubernetes run gets a follower again) and
        return it. It acts (writes the store, stops or starts processes), so only explicit keepers
        call it: `RunService.keep_all` (the Jupyter server's periodic pass), `Run.wait`, `jupyter px follow`,
        and `stop`. Reads call `observe`."""
        return self.status(run_id)

    def logs(
        self, run_id: str, role: str, index: int, offset: int = 0, follow: bool = False, poll_interval: float = 0.2
    ) -> Iterator[str]:
        """Log text of one replica from byte `offset`; with follow, until the run has finished."""
        import time

        while True:
            finished = self.store.status(run_id).state.finished
            for text, next_offset in self.store.iter_log(run_id, role, index, offset):
                offset = next_offset
                yield text
            if not follow or finished:  # finished was read before the last drain: nothing is missed
                return
            time.sleep(poll_interval)

    def force_stop(self, run_id: str) -> RunStatus:
        """Stop the run without its owner's help, when the owner cannot (it hangs) or the user
        says so (`jupyter px stop --force`). Default: as `stop` does."""
        self.stop(run_id)
        return self.store.status(run_id)

    def stacks(self, run_id: str) -> dict[str, Any]:
        """Take every live replica's Python stacks now (`jupyter_px.diagnostics`), keep the
        snapshot in the run and return it. Default: this backend cannot yet."""
        raise BackendError(
            f"taking the stacks of a running {self.name} run is not supported yet"
            " (local, Kubernetes and Slurm runs only)"
        )

    @abstractmethod
    def stop(self, run_id: str) -> None:
        """Stop every replica; the run ends as Stopped (unless it had already finished)."""

    def kill(self, run_id: str, role: str, index: int, signum: int) -> str:
        """Chaos on purpose (`jupyter px kill`): send `signum` to one running replica, as a crash
        or a lost node would end it, and say what was signalled; the run's owner then does what
        its policies say (a gang restart, a failed run). Default: this backend cannot."""
        raise BackendError(f"the {self.name or 'this'} backend cannot kill one replica (local runs can)")

    def clean(self, run_id: str) -> list[str]:
        """Remove what a finished run left outside the run store (its objects on a cluster: the
        finished pods and job an operator keeps) and say what, one entry per kind ("3 Pods").
        Its status, logs and metrics stay. Default: nothing is left anywhere else."""
        return []


def replica_to_kill(status: RunStatus, role: str, index: int) -> ReplicaStatus:
    """The replica `Backend.kill` may signal: one the run has, running, of a run not finished;
    BackendError saying which of these it is not."""
    try:
        replica = status.replica(role, index)
    except KeyError:
        names = ", ".join(r.key for r in status.replicas)
        raise BackendError(f"run {status.run_id} has no replica {role}-{index} (it has {names})") from None
    if status.state.finished:
        raise BackendError(f"run {status.run_id} has finished ({status.state.value}): nothing to kill")
    if replica.state != ReplicaState.RUNNING:
        raise BackendError(f"{replica.key} of run {status.run_id} is {replica.state.value}, not running")
    return replica
