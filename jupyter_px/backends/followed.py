"""A run owned by a detached follower: what the Kubernetes and Slurm backends share.

Such a backend hands a run to something that outlives this process (pods and a job on a cluster,
a job in Slurm's queue) and starts, per run, a follower (`python -m <backend>.follower RUN_DIR`,
`follower_process.py`), detached (`jupyter_px.processes.detached`) so that it outlives the kernel and the
Jupyter server as the job does. From its start on, the follower is the only writer of the run's
status. The verbs are the same whatever the backend:

- `submit` (the backend's own) creates the run outside, records where (its handle file), writes
  the initial status and calls `start_follower`, which records the follower as the run's owner
  (pid and creation time) before it may run: never a follower nobody knows about;
- `observe`, a read, reports "nobody is following this run" when an unfinished run's owner is
  gone (killed, given up on an unreachable cluster, its machine rebooted); it starts nothing;
- `reconcile` (`follow`), the explicit keeper's step, starts a follower again; one starter at a
  time (`starting`), and a follower's lock admits one follower per run;
- `stop` writes the stop request the follower acts on (`request_stop`), waits for the run to
  finish or its owner to go (`await_owner`) and, when no follower could, finishes the status
  itself (`mark_stopped`).

The follower's module and the files of this handshake in the run directory are each backend's
(`FollowerSpec`); a fifth backend of this kind (PBS, a cloud batch service) is a folder with its
handle, its follower and a subclass of `FollowedBackend` naming them.

A run's owner may also be a host of followers inside a longer-lived process: a Jupyter server
following its store's Kubernetes runs on one watch per namespace (`kubernetes/follower/host.py`).
Its owner says so (`host`), and it is alive while that process runs and its host is registered
under the store's `hosts/`; a host that stops hands its runs back to followers of their own.
"""

from __future__ import annotations

import contextlib
import os
import time
from abc import abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Generic, TypeVar

from ..processes import detached, file_lock
from ..runstore import ReplicaState, RunState, RunStatus, RunStore, atomic_write_json
from ..runstore.models import Reason, RunOwner
from .base import Backend, Observation

#: A replica state that no longer changes.
FINISHED_REPLICA = (ReplicaState.SUCCEEDED, ReplicaState.FAILED, ReplicaState.LOST, ReplicaState.STOPPED)
#: How often `stop` looks whether the follower has finished the run.
STOP_POLL_S = 0.05
NOBODY_FOLLOWS = "nobody is following this run"

#: A backend family's settings class (`settings_file.py`).
Settings = TypeVar("Settings")


@dataclass(frozen=True)
class FollowerSpec:
    """A backend's follower: the module it runs as, and where in a run directory it and the
    processes that start or stop it meet (paths relative to the run directory)."""

    #: `python -m <module> RUN_DIR` follows one run
    module: str
    #: what submit recorded about the run outside (kubernetes.json, slurm.json)
    handle: str
    #: a stop request: the follower ends the run as Stopped
    stop: str
    #: the follower's own log (its diagnostics, a crash's traceback)
    log: str
    #: held by whoever starts a follower: one starter at a time
    start_lock: str
    #: held by the follower that follows the run: one follower at a time
    lock: str


def owner_alive(status: RunStatus, home: Path | None = None) -> bool:
    """Is the owner the status names still there to keep it true? By identity (pid and creation
    time, recorded by its starter before it could run): a follower forked a moment ago, still in
    exec, is already itself; a later process with the same pid is not. A host of followers in a
    longer-lived process (`owner.host`) is there while that process runs and the host is
    registered in the run store `home` (`host_registered`)."""
    return status.owner is not None and owner_is_alive(status.owner, home)


def owner_is_alive(owner: RunOwner, home: Path | None = None) -> bool:
    if not detached.ProcessIdentity(owner.pid, owner.started_at).alive():
        return False
    return owner.host is None or home is None or host_registered(home, owner.host)


#: Where, in a run store, the hosts of followers in longer-lived processes register (a file each,
#: named by the host, removed when it stops hosting).
HOSTS_DIR = "hosts"


def host_file(home: Path, host: str) -> Path:
    return Path(home) / HOSTS_DIR / f"{host}.json"


def host_registered(home: Path, host: str) -> bool:
    return host_file(home, host).exists()


@contextlib.contextmanager
def starting(run_dir: Path, spec: FollowerSpec) -> Iterator[None]:
    """One starter of a run's follower at a time (two keepers looking at once start one); a
    submit holds it from writing the run's handle until its owner is recorded."""
    with file_lock.locked(run_dir / spec.start_lock):
        yield


def request_stop(run_dir: Path, spec: FollowerSpec) -> None:
    """Ask the run's follower to end the run as Stopped (it reads this file every tick)."""
    atomic_write_json(run_dir / spec.stop, {"requested_at": time.time(), "by_pid": os.getpid()})


def mark_stopped(status: RunStatus) -> None:
    """The status of a run stopped without its follower (none was there to write it)."""
    now = time.time()
    status.state, status.reason, status.message = RunState.STOPPED, Reason.STOPPED_BY_USER, "stopped on request"
    status.finished_at, status.owner = now, None
    for replica in status.replicas:
        if replica.state not in FINISHED_REPLICA:
            replica.state, replica.finished_at = ReplicaState.STOPPED, now
            replica.reason = Reason.STOPPED_BY_USER


def start_follower_process(store: RunStore, run_dir: Path, spec: FollowerSpec) -> int:
    """Start the run's own follower process and record it as the run's owner before it may run;
    its pid. The caller holds `starting(run_dir, spec)`."""
    run_dir = run_dir.resolve()
    env = detached.importable_environ()
    env["PX_HOME"] = str(store.home)
    with detached.start(
        spec.module, [str(run_dir)], log_path=run_dir / spec.log, cwd=run_dir, env=env
    ) as follower:  # it waits for "go": never a follower nobody knows about
        status = store.status(run_dir.name)
        status.owner = RunOwner(kind="follower", pid=follower.identity.pid, started_at=follower.identity.started_at)
        store.write_status(status)
        follower.go()
    return follower.pid


class FollowedBackend(Backend, Generic[Settings]):
    """A backend whose runs are owned by a detached follower (see the module doc). A subclass
    names its `follower` and how its settings load, and writes `submit` (calling
    `start_follower`), `stop` and `check`."""

    #: its follower's module and the handshake's files in a run directory
    follower: ClassVar[FollowerSpec]

    def __init__(self, store: RunStore | None = None, settings: Settings | None = None):
        super().__init__(store)
        self._settings = settings

    @abstractmethod
    def _load_settings(self) -> Settings:
        """The family's settings as its settings file and variables say (`settings_file.py`)."""

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = self._load_settings()
        return self._settings

    # ---- the owner ---------------------------------------------------------------------------
    def starting(self, run_dir: Path) -> contextlib.AbstractContextManager[None]:
        return starting(run_dir, self.follower)

    def start_follower(self, run_dir: Path) -> int:
        """Give the run an owner that follows it (by default a follower process of its own:
        `start_follower_process`), recorded before it may act; the owner's pid. The caller holds
        `starting(run_dir)`."""
        return start_follower_process(self.store, run_dir, self.follower)

    def owner_alive(self, status: RunStatus) -> bool:
        return owner_alive(status, self.store.home)

    def observe(self, run_id: str) -> Observation:
        """The stored status, and "nobody is following this run" when an unfinished run's owner
        is gone. A pure read: nothing is started (`reconcile` does that)."""
        status = self.store.status(run_id)
        if status.state.finished or self.owner_alive(status):
            return Observation(status)
        status = self.store.status(run_id)  # it may have written its final status just before exiting
        if status.state.finished:
            return Observation(status)
        return Observation(status, NOBODY_FOLLOWS)

    def follow(self, run_id: str) -> int | None:
        """Start the run's follower again if it is gone and the run is unfinished (idempotent: a
        second follower of the same run exits at once); its pid, or None if none was needed."""
        root = self.store.paths(run_id).root
        if not (root / self.follower.handle).exists():
            return None  # it never reached its backend: nothing to follow
        with self.starting(root):
            observed = self.observe(run_id)
            keeper = observed.status.owner is not None and observed.status.owner.kind == "keeper"
            if observed.owner_problem is None and not keeper:  # a keeper holds it until it needs following
                return None
            return self.start_follower(root)

    def reconcile(self, run_id: str) -> RunStatus:
        """The run is watched by its follower, which writes the store; reconciling (the explicit
        keeper's step, never a read's) means making sure it still runs and reading what it wrote."""
        self.follow(run_id)
        return self.store.status(run_id)

    # ---- stopping ----------------------------------------------------------------------------
    def request_stop(self, run_id: str) -> None:
        request_stop(self.store.paths(run_id).root, self.follower)

    def await_owner(self, run_id: str, deadline: float) -> RunStatus:
        """Wait until the run has finished or its owner is gone (or `deadline`, monotonic)."""
        while True:
            status = self.store.status(run_id)
            if status.state.finished or not self.owner_alive(status) or time.monotonic() >= deadline:
                return status
            time.sleep(STOP_POLL_S)
