"""The supervisor's watchdog: if the supervisor dies, nothing of its run survives it.

PR_SET_PDEATHSIG kills each replica process when the supervisor dies, but not what a replica
started (mpirun's ranks, a DataLoader's workers...). So at start-up the supervisor forks this
small process, connected by a pipe. The supervisor writes `+PGID` for each replica it starts,
`-PGID` when a replica's group is gone, and `done` just before a clean exit. When the pipe
reaches end-of-file without `done` (the kernel closes it when the supervisor dies, however it
dies), the watchdog first lets the replicas write the metric points they hold (they had SIGTERM
as their parent-death signal; their groups get it too, and up to the stop's grace to end:
`flushing.let_flush`), then SIGKILLs the run's cgroup (`cgroups.py`: every process the run
started, whatever its session or environment), the groups it knows, every process whose
environment carries the run's PX_RUN_ID, and every process it saw below the supervisor while it
lived (`Descendants`: the fallback where there is no cgroup), then marks the run Lost with the
reason and any metric points that were lost all the same, and exits.

`mark_lost` is also what the backend's `reconcile()` uses when it finds the supervisor gone and
the run not finished (say both processes were killed). A Lost status that cannot be written (a
full disk) is still returned, and the failure logged: reading a run never fails for lack of space.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

import psutil

from ...processes import start_time
from ...runstore import ReplicaState, RunState, RunStatus, RunStore
from ...runstore.models import Reason
from ...runstore.settle import settle_replica
from . import flushing
from .cgroups import RunCgroup
from .config import STOP_GRACE_S
from .process import kill_run_processes

log = logging.getLogger(__name__)

LOST_REASON = Reason.SUPERVISOR_LOST


def mark_lost(store: RunStore, run_id: str, message: str) -> RunStatus:
    """Record an unfinished run as Lost (a finished one is left as it is); return that status,
    also when it could not be written."""
    return mark_ended(
        store,
        run_id,
        Ending(RunState.LOST, LOST_REASON, message),
        ReplicaEnding(ReplicaState.LOST, LOST_REASON, "the run's supervisor died; this replica was killed with it"),
    )


@dataclass(frozen=True)
class Ending:
    """How a run its supervisor cannot end is recorded: Lost (it died or hung), or Stopped (a
    user's `stop --force`)."""

    state: RunState
    reason: str
    message: str


@dataclass(frozen=True)
class ReplicaEnding:
    state: ReplicaState
    reason: str
    message: str


def mark_ended(store: RunStore, run_id: str, run: Ending, replicas: ReplicaEnding) -> RunStatus:
    """Record an unfinished run (its processes already gone) as `run` says, its unfinished
    replicas as `replicas` says, with what their metrics ledgers say was lost all the same; a
    finished run is left as it is. The status is returned also when it could not be written."""
    status = store.status(run_id)
    if status.state.finished:
        return status
    now = time.time()
    status.state, status.reason, status.finished_at = run.state, run.reason, now
    notices = []
    for replica in status.replicas:
        if replica.state in (ReplicaState.PENDING, ReplicaState.RUNNING, ReplicaState.RESTARTING):
            replica.state, replica.reason, replica.message = replicas.state, replicas.reason, replicas.message
            replica.finished_at = now
        try:  # what its processes had accepted but not written when they were killed
            notice = flushing.record(replica, settle_replica(store.paths(run_id), replica.role, replica.index))
        except OSError as error:
            log.warning("%s: cannot settle its metrics: %s", replica.key, error)
            notice = None
        notices += [notice] if notice else []
    status.message = "; ".join([run.message, *notices])
    try:
        store.write_status(status)
    except OSError as error:
        log.warning("run %s is %s, but its status cannot be written: %s", run_id, run.state.value, error)
    return status


def end_without_supervisor(store: RunStore, run_id: str, run: Ending, replicas: ReplicaEnding) -> RunStatus:
    """End a run whose supervisor cannot (it hangs, or a user forces the stop): kill the supervisor
    and its watchdog, give the replicas SIGTERM and the stop's grace to write what they hold
    (`flushing.let_flush`), kill what is left (the run's cgroup, its process groups, anything
    carrying its PX_RUN_ID), then record the run as `run` says (`mark_ended`)."""
    status = store.status(run_id)
    if status.state.finished:
        return status
    replica_pids = {r.pid for r in status.replicas if r.pid}
    if status.owner is not None:
        try:
            supervisor = psutil.Process(status.owner.pid)
            helpers = [child for child in supervisor.children() if child.pid not in replica_pids]
            for process in [*helpers, supervisor]:  # the watchdog first: it would act on the death
                process.kill()
        except psutil.Error:
            pass
    groups = {r.pid for r in status.replicas if r.pid and r.state in (ReplicaState.RUNNING, ReplicaState.RESTARTING)}
    paths = store.paths(run_id)
    flushing.let_flush(paths, groups, STOP_GRACE_S)
    cgroup = RunCgroup.of_run(paths.root.resolve())
    if cgroup is not None:
        cgroup.kill()
        cgroup.remove()
    kill_run_processes(run_id, groups)
    return mark_ended(store, run_id, run, replicas)


#: Seconds between the watchdog's looks at the supervisor's descendants.
SCAN_S = 0.5


class Descendants:
    """Every process below the supervisor, remembered by identity (pid and creation time) from
    the moment the watchdog first sees it. Replicas are child subreapers (`process.py`), so
    nothing a replica starts leaves the supervisor's tree while the supervisor lives, whatever
    session, group or environment it takes; when the supervisor dies they are reparented out
    of reach, and this record is what finds them (the fallback where no cgroup holds the run, and
    for a warm replica's forks, whose /proc environ is the template's: no PX_RUN_ID scan sees them)."""

    def __init__(self, supervisor: int):
        self.supervisor = supervisor
        self.seen: dict[int, float] = {}

    def scan(self) -> None:
        from .memory import ProcessTable

        below = set(ProcessTable().descendants(self.supervisor)) - {os.getpid()}
        for pid in below - set(self.seen):
            try:
                self.seen[pid] = start_time.since_boot(pid)
            except psutil.Error:
                continue
        for pid in set(self.seen) - below:  # gone, or no longer below it (reparented: keep)
            if not psutil.pid_exists(pid):
                del self.seen[pid]

    def kill(self, spare: Callable[[int], bool] | None = None) -> int:
        killed = 0
        for pid, started in self.seen.items():
            try:
                process = psutil.Process(pid)
                if start_time.since_boot(pid) != started or (spare is not None and spare(pid)):
                    continue
                process.kill()
                killed += 1
            except psutil.Error:
                continue
        return killed


class Watchdog:
    """The supervisor's end of the pipe."""

    def __init__(self, store: RunStore, run_id: str):
        self.store = store
        self.run_id = run_id
        self.pid: int | None = None
        self._fd: int | None = None
        self.cgroup: RunCgroup | None = None  # the run's, where the machine gave it one
        self.spare: Callable[[int], bool] | None = None  # processes in it that are not the run's

    def start(self) -> int:
        read_fd, write_fd = os.pipe()
        supervisor = os.getpid()
        pid = os.fork()
        if pid == 0:  # the watchdog
            try:
                os.close(write_fd)
                _watch(read_fd, self.store, self.run_id, supervisor, self.cgroup, self.spare)
            finally:
                os._exit(0)
        os.close(read_fd)
        self.pid, self._fd = pid, write_fd
        return pid

    def _send(self, line: str) -> None:
        if self._fd is None:
            return
        try:
            os.write(self._fd, f"{line}\n".encode())
        except OSError:  # the watchdog is gone; the run goes on without it
            self._fd = None

    def add(self, pgid: int) -> None:
        self._send(f"+{pgid}")

    def forget(self, pgid: int) -> None:
        self._send(f"-{pgid}")

    def done(self) -> None:
        self._send("done")
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _watch(
    read_fd: int,
    store: RunStore,
    run_id: str,
    supervisor: int,
    cgroup: RunCgroup | None = None,
    spare: Callable[[int], bool] | None = None,
) -> None:
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)  # a signal to the supervisor's group is not for us
    os.closerange(3, read_fd)
    os.closerange(read_fd + 1, 1024)
    groups: set[int] = set()
    descendants = Descendants(supervisor)
    buffer = b""
    clean = False
    while True:
        if not select.select([read_fd], [], [], SCAN_S)[0]:
            descendants.scan()
            continue
        try:
            chunk = os.read(read_fd, 4096)
        except InterruptedError:
            continue
        if not chunk:
            break
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            text = line.decode()
            if text == "done":
                clean = True
            elif text[:1] == "+":
                groups.add(int(text[1:]))
            elif text[:1] == "-":
                groups.discard(int(text[1:]))
    if clean:
        return
    flushing.let_flush(store.paths(run_id), groups, STOP_GRACE_S)
    killed = cgroup.kill(spare=spare) if cgroup is not None else 0  # everything the run started, however it left
    killed += kill_run_processes(run_id, groups)
    killed += descendants.kill(spare)  # what no cgroup holds and no PX_RUN_ID names
    if cgroup is not None:
        cgroup.remove()
    log.warning(
        "watchdog: supervisor %d died; killed %d process group(s)/process(es) of run %s", supervisor, killed, run_id
    )
    try:
        mark_lost(
            store,
            run_id,
            f"the supervisor (pid {supervisor}) died unexpectedly; every process of the run "
            f"was stopped (see supervisor.log)",
        )
    except Exception as error:
        log.error("watchdog: could not mark run %s lost: %r", run_id, error)
