"""The supervisor of one local run: `python -m jupyter_px.backends.local.supervisor RUN_DIR`.

One small detached process per run owns the replica processes, so a run outlives the terminal,
the kernel and the Jupyter server that started it. `LocalBackend.submit` starts it with
`jupyter_px.processes.detached` (a session of its own), records its identity as the run's owner in
status.json and returns at once; the supervisor waits for the submitter's "go" on the go-pipe (so
it never runs for a submission that was abandoned halfway), then works on its own. A run it
cannot start is recorded Failed with the reason.

What it does, in order:

1. Forks its watchdog (`watchdog.py`), reserves a port per replica (`processes/ports.py`), places replicas on
   cores/GPUs (`resources.py`) and starts them (`launcher.py`), each in its own process group, with
   the parent-death signal armed, stdout+stderr appended to its log.
2. Waits for events: SIGCHLD and SIGTERM wake it through a signal wakeup fd (`wakeup.py`); a
   timeout covers memory polls (`memory.MemoryGuard`), kill deadlines, restarts and the
   heartbeat, and the replicas' watch (`replica_watch.py`). No busy loop.
3. Applies Kubeflow's rules (`policy.py`, `../outcome.py`): restarts what its restart policy allows,
   decides the run (`deciding.py`; a collective's timeout blames the rank that never joined it:
   `../collective_blame.py`) and stops what still runs once it is decided (SIGTERM, SIGKILL after
   `STOP_GRACE_S`), recording each with a typed `Ending` (`replica.py`); or starts the whole gang
   again (`attempts.py`): a retry, or elastic workers going on without a lost worker, or with it back.
4. A stop request (the `stop` file, plus SIGTERM to wake it) stops everything: the run ends Stopped.
5. Writes status.json atomically on every change and at least every `HEARTBEAT_S` (`status_writer.py`).
   The final state is written only once every process of the run is gone (`leftovers.py`): replicas
   reaped, their groups killed, every process it adopted as the child subreaper killed (a daemon that
   left its replica's session, whatever its environment), anything else carrying the run's PX_RUN_ID
   killed. So a finished status means nothing of the run is left running. A status write that fails
   (a full disk) does not end the run; the final one is retried until it succeeds.

Diagnostics go to supervisor.log (`logging`); exit codes read as a shell's (128+N: killed by signal N).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
import types
from pathlib import Path

from ...cluster import local_addresses
from ...diagnostics import taking
from ...processes import detached
from ...processes.ports import PortReservation
from ...runstore import ReplicaState, RunState, RunStatus, RunStore
from ...runstore.models import Reason, RunOwner
from ...topology import Topology, parse_topology
from ..collective_blame import CollectiveTimeouts
from ..failures import code_failure
from ..outcome import Outcome
from . import flushing, oom_kills, policy, replica_watch
from .attempts import Attempts, start_gang
from .cgroups import RunCgroup
from .config import (
    COMPLETION_GRACE_S,
    IDLE_POLL_S,
    LEDGER_POLL_S,
    MEMORY_POLL_S,
    STOP_FILE,
    STOP_GRACE_S,
    SUPERVISOR_MODULE,
)
from .deciding import decide
from .launcher import Launch, LaunchPlan, clean_environ
from .leftovers import kill_adopted, kill_leftovers, spare
from .memory import MemoryGuard
from .process import ExitInfo, become_subreaper, decode_wait_status, kill_group, load_libc
from .replica import UNFINISHED, Ending, Replica
from .resources import Machine, place, this_machine
from .spawners import Spawned, Spawner
from .status_writer import StatusWriter, record_start_failure
from .wakeup import SignalWakeup
from .watchdog import Watchdog

log = logging.getLogger(__name__)


class Supervisor:
    """Runs one run to its end; `run()` returns the process exit code (0 unless it failed itself)."""

    def __init__(self, store: RunStore, run_id: str):
        self.store = store
        self.run_id = run_id
        self.paths = store.paths(run_id)
        self.record = store.record(run_id)
        self.topology: Topology = parse_topology(self.record.topology)
        self.status = store.status(run_id)
        self.replicas: list[Replica] = []
        self.by_pid: dict[int, Replica] = {}
        self.watchdog = Watchdog(store, run_id)
        self.cgroup: RunCgroup | None = None
        self.ports: PortReservation | None = None
        self.machine: Machine | None = None
        self.plan: LaunchPlan | None = None
        self.memory: MemoryGuard | None = None
        self.outcome: Outcome | None = None
        self.stop_requested = False
        self.writer = StatusWriter(store, self.status)
        self.wakeup = SignalWakeup()
        self.spawner = Spawner.for_this_process()  # warm when forked from a template, with its zygote
        #: "master-0: 1,204 metric points not written: ..." lines, added to the run's message.
        self.metric_notices: list[str] = []
        self.watch = replica_watch.ReplicaWatch(self.paths)  # their system metrics; stalls, and then their stacks
        self.attempts = Attempts(self)  # the run-level retry (termination.max_retries): a gang restart
        # a hang's first failure: the rank it waited for is named, from the live ranks' stacks
        self.timeouts = CollectiveTimeouts(lambda targets, why: taking.take(self.paths.root, run_id, targets, why=why))

    # ---- start-up ------------------------------------------------------------------------------
    def _announce(self) -> None:
        """status.json gets us as its owner (as `submit` recorded us) and the replica list."""
        status = self.status
        me = detached.ProcessIdentity.current()
        status.owner = RunOwner(kind="supervisor", pid=me.pid, started_at=me.started_at)
        status.state = RunState.PENDING
        specs = self.topology.replicas()
        status.replicas = RunStatus.initial(status.run_id, [(s.role, s.index) for s in specs]).replicas
        self.replicas = [Replica(spec, entry) for spec, entry in zip(specs, status.replicas, strict=True)]
        self.writer.write(force=True)

    def _on_sigterm(self, signum: int, frame: types.FrameType | None) -> None:
        self.stop_requested = True

    def _prepare(self) -> None:
        self.machine = machine = this_machine()
        specs = self.topology.replicas()
        placements = place(specs, machine)
        self.ports = PortReservation()  # one lock per user and machine: other stores' runs too
        ports = self.ports.take(len(specs))
        by_role: dict[str, list[int]] = {}
        for replica, port in zip(self.replicas, ports, strict=True):
            replica.port = port
            by_role.setdefault(replica.spec.role, []).append(port)
        addresses = local_addresses(self.topology, by_role)
        for replica in self.replicas:
            replica.status.address = addresses[replica.spec.role][replica.spec.index]
            replica.status.memory_limit_mib = placements[(replica.spec.role, replica.spec.index)].memory_limit_mib
        environ, absent = clean_environ(self.store.home), self.attempts.absent()  # absent: elastic workers out
        self.plan = LaunchPlan(self.record, self.topology, self.paths, addresses, placements, environ, absent)
        self.memory = MemoryGuard(
            {key: p.memory_limit_mib for key, p in placements.items()},
            poll_s=MEMORY_POLL_S,
            mpi_processes_per_replica=self.topology.environment.processes_per_replica if self.topology.is_mpi else None,
        )
        if self.topology.is_mpi:
            self.plan.write_mpi_files()
        for replica in self.replicas:
            placed = placements[(replica.spec.role, replica.spec.index)].describe()
            spec = replica.spec
            log.info("%s: address %s, %s", replica.key, replica.status.address, placed)
            log.info("%s: restart %s (max %d)", replica.key, spec.restart_policy, spec.max_restarts)

    def _is_server(self, replica: Replica) -> bool:
        return policy.is_server(
            replica.spec.role,
            framework=self.topology.framework or "",
            is_mpi=self.topology.is_mpi,
            has_ps="ps" in self.topology.counts(),
        )

    def _spawn(self, *replicas: Replica) -> None:
        """Start these replicas (forked warm, they are requested all at once)."""
        started = self.spawner.start(replicas, self.plan, self.paths, self.ports, self.cgroup, self.writer.write)
        for replica, (spawned, launch) in zip(replicas, started, strict=True):
            self._started(replica, spawned, launch)

    def _started(self, replica: Replica, spawned: Spawned, launch: Launch) -> None:
        popen = spawned.process
        if self.memory is not None and spawned.inherited_mib:
            self.memory.inherited[popen.pid] = spawned.inherited_mib  # the template's pages, not the replica's
        replica.popen, replica.pgid = popen, popen.pid
        self.by_pid[popen.pid] = replica
        self.watchdog.add(popen.pid)
        st = replica.status
        st.state, st.pid, st.started_at, st.finished_at = ReplicaState.RUNNING, popen.pid, time.time(), None
        st.exit_code, st.signal, st.failure, st.launch = None, None, None, spawned.how
        replica.ending = None
        replica.kill_at = replica.restart_at = replica.finish_by = None
        self.writer.dirty = True
        log.info("%s: %s, pid %d: %s", replica.key, spawned.how, popen.pid, launch.argv)

    # ---- events --------------------------------------------------------------------------------
    def _reap(self) -> None:
        while True:
            try:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            replica = self.by_pid.pop(pid, None)
            if replica is not None:
                self._on_exit(replica, decode_wait_status(wait_status))
            elif pid == self.watchdog.pid:
                log.warning("watchdog (pid %d) exited: %s", pid, decode_wait_status(wait_status).describe())
            else:
                log.info("reaped adopted process %d: %s", pid, decode_wait_status(wait_status).describe())

    def _on_exit(self, replica: Replica, info: ExitInfo) -> None:
        self._record_exit(replica, info)
        self._settle_metrics(replica)

    def _record_exit(self, replica: Replica, info: ExitInfo) -> None:
        if replica.pgid:
            kill_group(replica.pgid, signal.SIGKILL)  # whatever it left in its group goes with it
            self.watchdog.forget(replica.pgid)
        if replica.popen is not None:
            replica.popen.returncode = info.exit_code  # we reaped it: Popen must not wait for it again
        replica.popen = None
        replica.kill_at = replica.term_at = replica.finish_by = None
        replica.last_exit = info
        st = replica.status
        st.exit_code, st.signal, st.finished_at = info.exit_code, info.signal, time.time()
        self.writer.dirty = True
        log.info("%s: pid %s %s", replica.key, st.pid, info.describe())
        ending, replica.ending = replica.ending, None
        if ending is not None and not ending.is_failure:  # we stopped it: record what we said
            st.reason, st.state, st.message = ending.reason.value, ending.state, ending.message
            return
        if ending is not None:  # OOMKilled: a failure like any other (it may be restarted)
            failed, st.reason, st.message = True, ending.reason.value, ending.message
        elif info.ok:
            failed, st.reason, st.message = False, Reason.COMPLETED, None
        else:
            failed, st.reason, st.message = True, Reason.SIGNALED if info.signal else Reason.ERROR, info.describe()
            spec = replica.spec
            st.failure, st.message = code_failure(self.paths.root, spec.role, spec.index, st.started_at, st.message)
        if failed and self.attempts.leaves(self, replica, info.exit_code):
            return  # an elastic worker: the run goes on without it
        if self._should_restart(replica, failed, info):
            replica.restart_at = time.monotonic() + policy.restart_delay(st.restarts)
            st.state = ReplicaState.RESTARTING
            st.message = (
                f"{st.message or 'exited with code 0'}; restarting ({st.restarts + 1} of {replica.spec.max_restarts})"
            )
            return
        st.state = ReplicaState.FAILED if failed else ReplicaState.SUCCEEDED
        if failed and st.restarts:
            st.message = f"{st.message} (after {st.restarts} restart{'s' if st.restarts != 1 else ''})"

    def _should_restart(self, replica: Replica, failed: bool, info: ExitInfo) -> bool:
        if self.outcome is not None or self.stop_requested:
            return False
        spec, others = replica.spec, [r for r in self.replicas if r is not replica]
        decides = policy.decides_run(
            spec.role,
            has_master=any(r.spec.role == "master" for r in self.replicas),
            other_workers_succeeded=all(
                r.status.state == ReplicaState.SUCCEEDED for r in others if r.spec.role == "worker"
            ),
        )
        return policy.should_restart(
            spec.restart_policy,
            failed=failed,
            exit_code=info.exit_code,
            restarts=replica.status.restarts,
            max_restarts=spec.max_restarts,
            decides_run=decides,
        )

    def _restart_due(self) -> None:
        now = time.monotonic()
        for replica in self.replicas:
            if replica.restart_at is not None and replica.restart_at <= now and self.outcome is None:
                st = replica.status
                st.restarts += 1
                previous = replica.last_exit.describe() if replica.last_exit else "exited"
                replica.mark_restart(self.paths.log(replica.spec.role, replica.spec.index))
                self._spawn(replica)
                st.message = f"restarted {st.restarts} time{'s' if st.restarts != 1 else ''}; last attempt {previous}"
                st.reason = None

    def _check_stop_request(self) -> None:
        self.stop_requested = self.stop_requested or (self.paths.root / STOP_FILE).exists()
        if not self.stop_requested:
            return
        if self.outcome is None:
            log.info("stop requested")
            self._decide_outcome(
                Outcome(RunState.STOPPED, Reason.STOPPED_BY_USER, "stopped on request"), Ending.by_user()
            )
        else:  # already decided: do not wait out the completion grace
            for replica in self.replicas:
                if replica.finish_by is not None:
                    replica.finish_by = time.monotonic()

    def _escalate(self) -> None:
        now = time.monotonic()
        for replica in self.replicas:
            if replica.running and replica.finish_by is not None and replica.finish_by <= now:
                replica.finish_by = None
                self._stop_replica(
                    replica,
                    Ending.by_run(
                        ReplicaState.SUCCEEDED,
                        f"still running {COMPLETION_GRACE_S:g} s after the run succeeded; stopped",
                    ),
                )
        for replica in self.replicas:
            why = flushing.kill_due(replica, self.paths, now, STOP_GRACE_S)
            if why is not None and replica.pgid:
                log.info("%s: %s; SIGKILL", replica.key, why)
                kill_group(replica.pgid, signal.SIGKILL)
                replica.kill_at = replica.term_at = None

    def _settle_metrics(self, replica: Replica) -> None:
        """After an exit: points its processes never wrote go into the run's message (`flushing.settle_exit`)."""
        notice = flushing.settle_exit(self.paths, replica)
        if notice:
            self.metric_notices.append(notice)
            self.writer.dirty = True

    # ---- deciding the run ---------------------------------------------------------------------
    def _stop_replica(self, replica: Replica, ending: Ending) -> None:
        if replica.running:
            if replica.ending is None and replica.pgid:
                replica.ending = ending
                kill_group(replica.pgid, signal.SIGTERM)
                replica.term_at = time.monotonic()
                replica.kill_at = replica.term_at + STOP_GRACE_S
        elif replica.status.state in (ReplicaState.PENDING, ReplicaState.RESTARTING):
            replica.end_without_exit(ending)
            self.writer.dirty = True

    def _decide_outcome(self, outcome: Outcome, others: Ending) -> None:
        self.outcome = outcome
        log.info("run %s: %s", outcome.state.value, outcome.message)
        for replica in self.replicas:
            self._stop_replica(replica, others)
        self.writer.dirty = True

    # ---- waiting --------------------------------------------------------------------------------
    def _next_timeout(self) -> float:
        now = time.monotonic()
        deadlines = [self.writer.heartbeat_due, now + IDLE_POLL_S]
        for replica in self.replicas:
            for deadline in (replica.kill_at, replica.finish_by, replica.restart_at):
                if deadline is not None:
                    deadlines.append(deadline)
            if replica.kill_at is not None:  # being stopped: read its ledgers (see _escalate)
                deadlines.append(now + LEDGER_POLL_S)
        if self.memory is not None and oom_kills.watched(self.memory, self.replicas):
            deadlines.append(self.memory.next_poll)
        if self.timeouts.taking:  # its thread does not wake the loop
            deadlines.append(now + LEDGER_POLL_S)
        return max(0.0, min(deadlines) - now)

    # ---- main ----------------------------------------------------------------------------------
    def run(self) -> int:
        load_libc()
        become_subreaper()
        self.cgroup = RunCgroup.create(self.run_id, self.paths.root)  # before the watchdog: it kills it
        self.watchdog.cgroup, self.watchdog.spare = self.cgroup, spare
        self.watchdog.start()
        self.wakeup.install(self._on_sigterm)
        code = 0
        try:
            self._announce()
            self._prepare()
            self._check_stop_request()
            if self.outcome is None:
                start_gang(self)
                self.status.state = RunState.RUNNING
                self.status.started_at = time.time()
                self.writer.write(force=True)
            self._loop()
        except BaseException as error:
            log.exception("supervisor error: %r", error)
            if self.outcome is None:
                self.outcome = Outcome(
                    RunState.FAILED, Reason.SUPERVISOR_ERROR, f"the local supervisor failed: {error}"
                )
            for replica in self.replicas:
                if replica.status.state in UNFINISHED:
                    replica.ending = replica.ending or Ending.by_run(
                        ReplicaState.STOPPED, "stopped because the supervisor failed"
                    )
            code = 1
        finally:
            self._shutdown()
        return code

    def _loop(self) -> None:
        while True:
            self._reap()
            self._check_stop_request()
            if self.outcome is None:
                oom_kills.enforce(self.memory, self.replicas)
                self.writer.dirty |= self.watch.turn(self.replicas)
            self._escalate()
            self._restart_due()
            decide(self)
            self.attempts.tick(self)
            if self.outcome is not None and not any(r.running for r in self.replicas):
                return
            self.writer.write()
            self.wakeup.wait(self._next_timeout())

    def _shutdown(self) -> None:
        """Leave nothing behind, then write the final status and let the watchdog go."""
        for replica in self.replicas:
            if replica.running and replica.pgid:
                kill_group(replica.pgid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while any(r.running for r in self.replicas) and time.monotonic() < deadline:
            self._reap()
            if any(r.running for r in self.replicas):
                time.sleep(0.02)
        zygote = self.spawner.close()  # it exits when its socket closes
        kill_adopted(keep=lambda: {self.watchdog.pid or 0, zygote, *self.by_pid}, reap=self._reap)
        kill_leftovers(self.run_id, exclude=[self.watchdog.pid or 0, *self.by_pid])
        if self.cgroup is not None:  # what left our reach (another subreaper adopted it)
            if self.cgroup.kill(spare=spare):
                log.info("killed what was left in the run's cgroup %s", self.cgroup.path)
            self._reap()
            self.cgroup.remove()
        self._reap()
        for replica in self.replicas:  # anything not decided by an exit (e.g. never started)
            if replica.status.state in UNFINISHED:
                replica.end_without_exit(
                    replica.ending or Ending.by_run(ReplicaState.STOPPED, "the run ended before it finished")
                )
        if self.ports is not None:
            self.ports.close()
        for replica in self.replicas:  # processes that had left their replica's group are gone now
            self._settle_metrics(replica)
        self.attempts.ended(self)
        outcome = self.outcome or Outcome(RunState.FAILED, Reason.SUPERVISOR_ERROR, "the supervisor ended early")
        message = "; ".join([outcome.message, *self.metric_notices])
        self.status.state, self.status.reason, self.status.message = outcome.state, outcome.reason, message
        self.status.finished_at = time.time()
        try:
            self.writer.write_final()
        finally:
            self.watchdog.done()
        log.info("run %s (%s): %s", outcome.state.value, outcome.reason, outcome.message)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=f"python -m {SUPERVISOR_MODULE}",
        description="Run and watch the replicas of one local run (started by LocalBackend).",
    )
    parser.add_argument("run_dir", type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%Y-%m-%d %H:%M:%S"
    )
    run_dir = args.run_dir.resolve()
    if not detached.await_go():
        log.info("the submission of run %s was abandoned before it was complete; nothing started", run_dir.name)
        return 0
    log.info("supervisor pid %d for run %s", os.getpid(), run_dir.name)
    store = RunStore(run_dir.parent.parent)
    try:
        supervisor = Supervisor(store, run_dir.name)
    except Exception as error:
        log.exception("cannot set up run %s", run_dir.name)
        record_start_failure(store, run_dir.name, error)
        return 1
    return supervisor.run()


if __name__ == "__main__":
    sys.exit(main())
