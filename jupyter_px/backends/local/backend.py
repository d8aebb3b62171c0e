"""`LocalBackend`: runs every replica as a process on this machine, owned by a per-run supervisor.

The backend itself keeps no state and no processes: `submit` starts a detached supervisor
(`supervisor.py`) and returns as soon as that supervisor has put its pid into status.json, so a
caller polling right after `submit` sees Pending or Running, never nothing. Everything after
that goes through the run directory (status.json, the `stop` file), which is why any process
(another kernel, the CLI, the Jupyter server) can watch or stop a run it did not start.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from ...runstore import RunStatus, atomic_write_json, read_tail
from ...topology import Topology
from ..base import Backend, BackendError, SubmitHandle
from . import resources
from .config import HEARTBEAT_S, STOP_FILE, STOP_GRACE_S, SUPERVISOR_MODULE
from .launcher import clean_environ, find_mpirun
from .process import is_supervisor, kill_run_processes
from .watchdog import mark_lost

#: A run from another host is Lost once its status has not been refreshed for this long.
LOST_AFTER_S = 5 * HEARTBEAT_S

#: How long `submit` waits for the supervisor to announce itself (a loaded machine is slow).
START_TIMEOUT_S = 60.0


class LocalBackend(Backend):
    """One process per replica on this machine (the default backend: nothing to set up)."""

    name = "local"

    def check(self, topology: Topology) -> None:
        """Refuse, before anything starts, what this machine cannot give (names replica and value)."""
        resources.check(topology)
        if topology.is_mpi and find_mpirun() is None:
            raise BackendError(
                f"framework {topology.framework} runs its launcher with OpenMPI's mpirun, which is "
                "not on PATH here; install OpenMPI (e.g. apt-get install openmpi-bin)"
            )

    def submit(self, run_id: str) -> SubmitHandle:
        record = self.store.record(run_id)
        paths = self.store.paths(run_id)
        if record.workdir and not Path(record.workdir).is_dir():
            raise BackendError(f"workdir {record.workdir!r} of run {run_id} is not a directory")
        run_dir = paths.root.resolve()
        log_path = run_dir / "supervisor.log"
        read_fd, write_fd = os.pipe()
        try:
            try:
                with open(log_path, "ab") as log:
                    launcher = subprocess.Popen(
                        [sys.executable, "-m", SUPERVISOR_MODULE, str(run_dir), "--ready-fd", str(write_fd)],
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        cwd=str(run_dir),
                        env={**clean_environ(self.store.home), "PYTHONUNBUFFERED": "1"},
                        start_new_session=True,
                        pass_fds=(write_fd,),
                        close_fds=True,
                    )
            finally:
                os.close(write_fd)
            try:
                ready = self._await_ready(read_fd)
            finally:
                launcher.wait()  # it forked the supervisor and exited; reap it (no zombie in a kernel)
        finally:
            os.close(read_fd)
        if not ready:
            self._abandon(run_id)
            raise BackendError(
                f"the local supervisor of run {run_id} did not start; its log ({log_path}) says:\n"
                f"{read_tail(log_path, 2000).strip() or '(nothing)'}"
            )
        status = self.store.status(run_id)
        return SubmitHandle(run_id, self.name, {"supervisor_pid": status.supervisor_pid, "run_dir": str(run_dir)})

    def _abandon(self, run_id: str) -> None:
        """A supervisor too slow to announce itself must not start the run later."""
        paths = self.store.paths(run_id)
        atomic_write_json(paths.root / STOP_FILE, {"requested_at": time.time(), "reason": "start timed out"})
        pid = self.store.status(run_id).supervisor_pid
        if pid and is_supervisor(pid, paths.root.resolve()):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    @staticmethod
    def _await_ready(fd: int) -> bool:
        deadline = time.monotonic() + START_TIMEOUT_S
        data = b""
        while b"\n" not in data:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            readable, _, _ = select.select([fd], [], [], left)
            if not readable:
                return False
            chunk = os.read(fd, 64)
            if not chunk:  # every writer is gone: the supervisor died before announcing itself
                return False
            data += chunk
        return data.startswith(b"ready")

    def reconcile(self, run_id: str) -> RunStatus:
        """The stored status; a run whose supervisor is gone while it claims to run becomes Lost."""
        status = self.store.status(run_id)
        if status.state.finished or not status.supervisor_pid:
            return status
        run_dir = self.store.paths(run_id).root.resolve()
        if is_supervisor(status.supervisor_pid, run_dir):
            return status
        if not self._on_this_host(run_id) and time.time() - status.updated_at < LOST_AFTER_S:
            return status  # another machine's (or container's) run: only a stale heartbeat tells
        status = self.store.status(run_id)  # it may have written its final status just before exiting
        if status.state.finished:
            return status
        kill_run_processes(run_id)  # normally the watchdog has done this; it may have died too
        return mark_lost(
            self.store,
            run_id,
            f"the supervisor (pid {status.supervisor_pid}) is gone while the run "
            f"was {status.state.value}; see {run_dir / 'supervisor.log'}",
        )

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
        if pid and is_supervisor(pid, paths.root.resolve()):
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
