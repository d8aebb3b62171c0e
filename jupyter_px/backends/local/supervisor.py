"""The supervisor of one local run: `python -m jupyter_px.backends.local.supervisor RUN_DIR`.

One small detached process per run owns the replica processes, so a run outlives the terminal,
the kernel and the Jupyter server that started it. It is started by `LocalBackend.submit`, forks
once more so that it is nobody's child (no zombie in a long-lived kernel), writes its pid into
status.json and only then tells the submitter it is up.

What it does, in order:

1. Forks its watchdog (see `watchdog.py`), reserves a free port per replica (`ports.py`), places
   replicas on cores/GPUs (`resources.py`) and starts them (`launcher.py`): each in its own
   process group, with the parent-death signal armed, stdout+stderr appended to its log.
2. Waits for events: SIGCHLD and SIGTERM wake it through a signal wakeup fd; a timeout covers
   memory polls (every `MEMORY_POLL_S` while some replica has a limit), kill deadlines,
   restarts and the heartbeat. No busy loop.
3. Applies Kubeflow's rules. The run succeeds when the master succeeds (every worker, when there
   is no master). A replica that fails is restarted when its restart_policy allows it
   (OnFailure, Always; ExitCode for retryable codes 130/137/143) and max_restarts is not spent,
   otherwise it fails the run. The replicas still running when the run is decided are stopped
   (SIGTERM to the group, SIGKILL after `STOP_GRACE_S`), as "stopped by run": Succeeded when the
   run succeeded (parameter servers, TF servers), Stopped when it failed.
4. A stop request (the `stop` file, plus SIGTERM to wake it) stops everything: the run ends
   Stopped.
5. Writes status.json atomically on every change and at least every `HEARTBEAT_S`. The run's
   final state is written only once every process of the run is gone (reaped, its group
   killed, anything else carrying the run's PX_RUN_ID killed), so a finished status means
   nothing of the run is left running. As a child subreaper it also adopts (and reaps) what a
   replica leaves behind.

Exit codes are recorded as a shell reports them: 128+N for a process killed by signal N, with
the signal's name alongside.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from ...cluster import local_addresses
from ...runstore import ReplicaState, ReplicaStatus, RunState, RunStore
from ...topology import ReplicaSpec, Topology, parse_topology
from . import memory
from .config import (
    COMPLETION_GRACE_S,
    HEARTBEAT_S,
    IDLE_POLL_S,
    MASTER_HEAD_START_S,
    MEMORY_POLL_S,
    RETRYABLE_EXIT_CODES,
    STOP_FILE,
    STOP_GRACE_S,
)
from .launcher import LaunchPlan, clean_environ
from .ports import PortReservation
from .process import ExitInfo, become_subreaper, decode_wait_status, kill_group, load_libc, run_processes, spawn
from .resources import Machine, place, this_machine
from .watchdog import Watchdog


def log(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}", flush=True)


@dataclass
class Replica:
    """One replica: its spec, its status entry and, while it runs, its process."""

    spec: ReplicaSpec
    status: ReplicaStatus
    popen: subprocess.Popen | None = None
    pgid: int | None = None
    #: Set when we end it: (reason, state to record, message).
    stop_as: tuple[str, ReplicaState, str] | None = None
    kill_at: float | None = None
    restart_at: float | None = None
    #: After the run succeeded: when to stop it if it has not finished by itself.
    finish_by: float | None = None
    last_exit: ExitInfo | None = None
    port: int | None = None

    @property
    def key(self) -> str:
        return self.spec.key

    @property
    def running(self) -> bool:
        return self.popen is not None


class Supervisor:
    """Runs one run to its end; `run()` returns the process exit code (0 unless it failed itself)."""

    def __init__(self, store: RunStore, run_id: str, ready_fd: int | None = None):
        self.store = store
        self.run_id = run_id
        self.paths = store.paths(run_id)
        self.ready_fd = ready_fd
        self.record = store.record(run_id)
        self.topology: Topology = parse_topology(self.record.topology)
        self.status = store.status(run_id)
        self.replicas: list[Replica] = []
        self.by_pid: dict[int, Replica] = {}
        self.watchdog = Watchdog(store, run_id)
        self.ports: PortReservation | None = None
        self.machine: Machine | None = None
        self.plan: LaunchPlan | None = None
        self.outcome: tuple[RunState, str, str] | None = None
        self.stop_requested = False
        self.dirty = True
        self.last_write = 0.0
        self.ranks = memory.MpiRanks()
        self.next_memory_poll = 0.0
        self._wakeup_r: int | None = None

    # ---- start-up ------------------------------------------------------------------------------
    def _announce(self) -> None:
        """status.json gets our pid and the replica list; then the submitter may return."""
        status = self.status
        status.supervisor_pid = os.getpid()
        status.state = RunState.PENDING
        status.replicas = [ReplicaStatus(role=s.role, index=s.index) for s in self.topology.replicas()]
        specs = self.topology.replicas()
        self.replicas = [Replica(spec, entry) for spec, entry in zip(specs, status.replicas, strict=True)]
        self._write(force=True)
        if self.ready_fd is not None:
            try:
                os.write(self.ready_fd, b"ready\n")
                os.close(self.ready_fd)
            except OSError:
                pass
            self.ready_fd = None

    def _install_signals(self) -> None:
        # A caller may have blocked signals (masks are inherited through exec); we need these.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD, signal.SIGTERM})
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        self._wakeup_r = read_fd
        signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        signal.signal(signal.SIGTERM, self._on_sigterm)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # the wakeup fd does the work
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    def _on_sigterm(self, signum, frame) -> None:
        self.stop_requested = True

    def _prepare(self) -> None:
        self.machine = machine = this_machine()
        specs = self.topology.replicas()
        placements = place(specs, machine)
        self.ports = PortReservation(self.store.home / "ports.lock")
        ports = self.ports.take(len(specs))
        by_role: dict[str, list[int]] = {}
        for replica, port in zip(self.replicas, ports, strict=False):
            replica.port = port
            by_role.setdefault(replica.spec.role, []).append(port)
        addresses = local_addresses(self.topology, by_role)
        for replica in self.replicas:
            replica.status.address = addresses[replica.spec.role][replica.spec.index]
        self.plan = LaunchPlan(
            self.record, self.topology, self.paths, addresses, placements, clean_environ(self.store.home)
        )
        if self.topology.is_mpi:
            self.plan.write_mpi_files()
        for replica in self.replicas:
            p = placements[(replica.spec.role, replica.spec.index)]
            log(
                f"{replica.key}: address {replica.status.address}, cores {list(p.cpus) if p.cpus else 'all'}, "
                f"gpus {list(p.gpus) or 'none'}, memory limit "
                f"{f'{p.memory_limit_mib:.0f} MiB' if p.memory_limit_mib else 'none'}, "
                f"restart {replica.spec.restart_policy} (max {replica.spec.max_restarts})"
            )

    def _start_order(self) -> list[Replica]:
        """The master first: it hosts the rendezvous (torch's TCPStore), and a worker that finds
        it not listening yet backs off for up to a second. MPI is the other way round: its
        workers are up before the launcher starts."""
        rank = {"master": 0, "ps": 1, "worker": 2, "evaluator": 3}
        if self.topology.is_mpi:
            rank = {"worker": 0, "master": 1}
        return sorted(self.replicas, key=lambda r: (rank.get(r.spec.role, 2), r.spec.index))

    def _head_start(self) -> None:
        """Let the master get ahead before the workers compete with it for the cores.

        A PyTorch worker whose first connection to the master's TCPStore is refused (the master
        is still importing torch) retries only after a backoff of up to about a second. On a
        machine with fewer cores than processes, the master's imports are slowed by the
        workers', so without a lead it is often last to listen. The lead costs little there
        (the cores are saturated either way) and is not taken where there are enough cores.
        """
        if self.topology.framework != "pytorch":
            return
        delay = MASTER_HEAD_START_S
        if delay is None:
            processes = len(self.replicas) * self.topology.environment.processes_per_replica
            delay = 0.3 if processes > len(self.machine.cpus) else 0.0
        if delay > 0:
            self._wait(delay)

    def _is_server(self, replica: Replica) -> bool:
        """Replicas that serve until stopped, rather than finish: stopped at once on success."""
        role = replica.spec.role
        if role in ("ps", "evaluator"):
            return True
        if role == "worker" and self.topology.is_mpi:
            return True  # an MPI host placeholder
        return role == "worker" and self.topology.framework == "tensorflow" and "ps" in self.topology.counts()

    def _spawn(self, replica: Replica) -> None:
        assert self.plan is not None and self.ports is not None
        launch = self.plan.launch(replica.spec)
        if replica.port is not None:
            self.ports.release_socket(replica.port)
        self.paths.logs_dir.mkdir(parents=True, exist_ok=True)
        popen = spawn(
            launch.argv,
            launch.env,
            launch.cwd,
            self.paths.log(replica.spec.role, replica.spec.index),
            self.plan.affinity(replica.spec),
        )
        replica.popen, replica.pgid = popen, popen.pid
        self.by_pid[popen.pid] = replica
        self.watchdog.add(popen.pid)
        st = replica.status
        st.state, st.pid, st.started_at, st.finished_at = ReplicaState.RUNNING, popen.pid, time.time(), None
        st.exit_code = st.signal = None
        replica.stop_as = replica.kill_at = replica.restart_at = replica.finish_by = None
        self.dirty = True
        log(f"{replica.key}: started pid {popen.pid}: {launch.argv}")

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
                log(f"watchdog (pid {pid}) exited: {decode_wait_status(wait_status).describe()}")
            else:
                log(f"reaped adopted process {pid}: {decode_wait_status(wait_status).describe()}")

    def _on_exit(self, replica: Replica, info: ExitInfo) -> None:
        now = time.time()
        if replica.pgid:
            kill_group(replica.pgid, signal.SIGKILL)  # whatever it left in its group goes with it
            self.watchdog.forget(replica.pgid)
        if replica.popen is not None:
            replica.popen.returncode = info.exit_code  # we reaped it: Popen must not wait for it again
        replica.popen = None
        replica.kill_at = replica.finish_by = None
        replica.last_exit = info
        st = replica.status
        st.exit_code, st.signal, st.finished_at = info.exit_code, info.signal, now
        self.dirty = True
        log(f"{replica.key}: pid {st.pid} {info.describe()}")
        stop_as, replica.stop_as = replica.stop_as, None
        if stop_as is not None and stop_as[0] != "OOMKilled":
            st.reason, st.state, st.message = stop_as
            return
        if stop_as is not None:  # OOMKilled
            failed, st.reason, st.message = True, "OOMKilled", stop_as[2]
        elif info.ok:
            failed, st.reason, st.message = False, "Completed", None
        else:
            failed = True
            st.reason = "Signaled" if info.signal else "Error"
            st.message = info.describe()
        if self._should_restart(replica, failed, info):
            delay = min(0.2 * 2**st.restarts, 5.0)
            replica.restart_at = time.monotonic() + delay
            st.state = ReplicaState.RESTARTING
            st.message = (
                f"{st.message or 'exited with code 0'}; restarting ({st.restarts + 1} of {replica.spec.max_restarts})"
            )
            return
        st.state = ReplicaState.FAILED if failed else ReplicaState.SUCCEEDED
        if failed and st.restarts:
            st.message = f"{st.message} (after {st.restarts} restart{'s' if st.restarts != 1 else ''})"

    def _should_restart(self, replica: Replica, failed: bool, info: ExitInfo) -> bool:
        spec = replica.spec
        if self.outcome is not None or self.stop_requested or replica.status.restarts >= spec.max_restarts:
            return False
        if spec.restart_policy == "OnFailure":
            return failed
        if spec.restart_policy == "ExitCode":
            return failed and info.exit_code in RETRYABLE_EXIT_CODES
        if spec.restart_policy == "Always":
            return failed or not self._decides_run(replica)
        return False

    def _decides_run(self, replica: Replica) -> bool:
        """Would this replica's success finish the run?"""
        if replica.spec.role == "master":
            return True
        if replica.spec.role != "worker" or any(r.spec.role == "master" for r in self.replicas):
            return False
        return all(
            r.status.state == ReplicaState.SUCCEEDED
            for r in self.replicas
            if r.spec.role == "worker" and r is not replica
        )

    def _restart_due(self) -> None:
        now = time.monotonic()
        for replica in self.replicas:
            if replica.restart_at is not None and replica.restart_at <= now and self.outcome is None:
                st = replica.status
                st.restarts += 1
                previous = replica.last_exit.describe() if replica.last_exit else "exited"
                with open(self.paths.log(replica.spec.role, replica.spec.index), "a", encoding="utf-8") as handle:
                    handle.write(f"--- restart {st.restarts} ---\n")
                self._spawn(replica)
                st.message = f"restarted {st.restarts} time{'s' if st.restarts != 1 else ''}; last attempt {previous}"
                st.reason = None

    def _check_stop_request(self) -> None:
        if not self.stop_requested and (self.paths.root / STOP_FILE).exists():
            self.stop_requested = True
        if not self.stop_requested:
            return
        if self.outcome is None:
            log("stop requested")
            self._decide_outcome(
                RunState.STOPPED,
                "StoppedByUser",
                "stopped on request",
                ("StoppedByUser", ReplicaState.STOPPED, "stopped on request"),
            )
        else:  # already decided: do not wait out the completion grace
            for replica in self.replicas:
                if replica.finish_by is not None:
                    replica.finish_by = time.monotonic()

    def _watches_memory(self, replica: Replica) -> bool:
        """Does this replica's process tree have a limit to watch (its own, or its MPI ranks')?"""
        assert self.plan is not None
        placements = self.plan.placements
        if placements[(replica.spec.role, replica.spec.index)].memory_limit_mib:
            return True
        return (
            self.topology.is_mpi
            and replica.spec.role == "master"
            and any(p.memory_limit_mib for (role, _), p in placements.items() if role == "worker")
        )

    def _check_memory(self) -> None:
        """At most every MEMORY_POLL_S: one read of the process table, every watched tree."""
        assert self.plan is not None
        now = time.monotonic()
        watched = [r for r in self.replicas if r.running and r.stop_as is None and self._watches_memory(r)]
        if not watched or now < self.next_memory_poll:
            return
        self.next_memory_poll = now + MEMORY_POLL_S
        table = memory.ProcessTable()
        for replica in watched:
            exclude: set[int] = set()
            if self.topology.is_mpi and replica.spec.role == "master":
                exclude = self._check_mpi_ranks(table, replica)
            limit = self.plan.placements[(replica.spec.role, replica.spec.index)].memory_limit_mib
            excess = table.check(replica.status.pid, limit, exclude) if limit else None
            if excess is not None:
                self._oom_kill(replica, excess.describe(replica.key))

    def _check_mpi_ranks(self, table: memory.ProcessTable, launcher: Replica) -> set[int]:
        """Charge each MPI rank to its worker's memory limit; a rank over it fails its worker.
        Returns the ranks' pids (not charged to the launcher)."""
        assert self.plan is not None
        ranks = self.ranks.ranks(table, launcher.status.pid)
        for pid, rank in ranks.items():
            index = self.plan.rank_worker(rank)
            placement = self.plan.placements.get(("worker", index))
            if placement is None or not placement.memory_limit_mib:
                continue
            excess = table.check(pid, placement.memory_limit_mib)
            if excess is None:
                continue
            message = excess.describe(f"MPI rank {rank} (worker-{index})")
            log(message)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            worker = next((r for r in self.replicas if r.spec.role == "worker" and r.spec.index == index), None)
            if worker is not None and worker.running and worker.stop_as is None:
                self._oom_kill(worker, message)
        return set(ranks)

    def _oom_kill(self, replica: Replica, message: str) -> None:
        log(f"{replica.key}: {message}; killing it")
        replica.stop_as = ("OOMKilled", ReplicaState.FAILED, message)
        if replica.pgid:
            kill_group(replica.pgid, signal.SIGKILL)

    def _escalate(self) -> None:
        now = time.monotonic()
        for replica in self.replicas:
            if replica.running and replica.finish_by is not None and replica.finish_by <= now:
                replica.finish_by = None
                self._stop_replica(
                    replica,
                    (
                        "StoppedByRun",
                        ReplicaState.SUCCEEDED,
                        f"still running {COMPLETION_GRACE_S:g} s after the run succeeded; stopped",
                    ),
                )
        for replica in self.replicas:
            if replica.running and replica.kill_at is not None and replica.kill_at <= now:
                log(f"{replica.key}: still running {STOP_GRACE_S:g} s after SIGTERM; SIGKILL")
                kill_group(replica.pgid, signal.SIGKILL)
                replica.kill_at = None

    # ---- deciding the run ---------------------------------------------------------------------
    def _stop_replica(self, replica: Replica, stop_as: tuple[str, ReplicaState, str]) -> None:
        if replica.running:
            if replica.stop_as is None:
                replica.stop_as = stop_as
                kill_group(replica.pgid, signal.SIGTERM)
                replica.kill_at = time.monotonic() + STOP_GRACE_S
        elif replica.status.state in (ReplicaState.PENDING, ReplicaState.RESTARTING):
            st = replica.status
            st.reason, st.state, st.message = stop_as
            if st.state == ReplicaState.SUCCEEDED and st.started_at is None:
                st.state = ReplicaState.STOPPED
            st.finished_at = st.finished_at or time.time()
            replica.restart_at = None
            self.dirty = True

    def _decide_outcome(
        self, state: RunState, reason: str, message: str, others: tuple[str, ReplicaState, str]
    ) -> None:
        self.outcome = (state, reason, message)
        log(f"run {state.value}: {message}")
        for replica in self.replicas:
            self._stop_replica(replica, others)
        self.dirty = True

    def _decide(self) -> None:
        if self.outcome is not None:
            return
        failed = [r for r in self.replicas if r.status.state == ReplicaState.FAILED]
        if failed:
            first = min(failed, key=lambda r: r.status.finished_at or 0)
            st = first.status
            what = f"{first.key} failed ({st.reason})" + (f": {st.message}" if st.message else "")
            self._decide_outcome(
                RunState.FAILED,
                "ReplicaFailed",
                what,
                ("StoppedByRun", ReplicaState.STOPPED, f"stopped because {first.key} failed"),
            )
            return
        masters = [r for r in self.replicas if r.spec.role == "master"]
        deciding = masters or [r for r in self.replicas if r.spec.role == "worker"] or self.replicas
        if all(r.status.state == ReplicaState.SUCCEEDED for r in deciding):
            what = (
                f"{deciding[0].key} succeeded"
                if len(deciding) == 1
                else f"all {len(deciding)} {deciding[0].spec.role}s succeeded"
            )
            self.outcome = (RunState.SUCCEEDED, "Completed", what)
            self.dirty = True
            log(f"run Succeeded: {what}")
            grace_end = time.monotonic() + COMPLETION_GRACE_S
            for replica in self.replicas:
                if replica.running and not self._is_server(replica):
                    replica.finish_by = grace_end  # e.g. a worker still in its last collective
                else:
                    self._stop_replica(
                        replica,
                        ("StoppedByRun", ReplicaState.SUCCEEDED, "still running when the run succeeded; stopped"),
                    )

    # ---- status --------------------------------------------------------------------------------
    def _write(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or self.dirty or now - self.last_write >= HEARTBEAT_S:
            self.store.write_status(self.status)
            self.dirty = False
            self.last_write = now

    def _next_timeout(self) -> float:
        now = time.monotonic()
        deadlines = [self.last_write + HEARTBEAT_S, now + IDLE_POLL_S]
        assert self.plan is not None
        for replica in self.replicas:
            if replica.kill_at is not None:
                deadlines.append(replica.kill_at)
            if replica.finish_by is not None:
                deadlines.append(replica.finish_by)
            if replica.restart_at is not None:
                deadlines.append(replica.restart_at)
            if replica.running and replica.stop_as is None and self._watches_memory(replica):
                deadlines.append(self.next_memory_poll)
        return max(0.0, min(deadlines) - now)

    def _wait(self, timeout: float) -> None:
        assert self._wakeup_r is not None
        readable, _, _ = select.select([self._wakeup_r], [], [], timeout)
        if readable:
            try:
                while os.read(self._wakeup_r, 4096):
                    pass
            except BlockingIOError:
                pass

    # ---- main ----------------------------------------------------------------------------------
    def run(self) -> int:
        load_libc()
        become_subreaper()
        self.watchdog.start()
        self._install_signals()
        code = 0
        try:
            self._announce()
            self._prepare()
            self._check_stop_request()
            if self.outcome is None:
                for replica in self._start_order():
                    self._spawn(replica)
                    if replica.spec.role == "master" and len(self.replicas) > 1:
                        self._head_start()
                self.status.state = RunState.RUNNING
                self.status.started_at = time.time()
                self._write(force=True)
            self._loop()
        except BaseException as error:
            log(f"supervisor error: {error!r}\n{traceback.format_exc()}")
            if self.outcome is None:
                self.outcome = (RunState.FAILED, "SupervisorError", f"the local supervisor failed: {error}")
            for replica in self.replicas:
                if replica.status.state in (ReplicaState.PENDING, ReplicaState.RUNNING, ReplicaState.RESTARTING):
                    replica.stop_as = replica.stop_as or (
                        "StoppedByRun",
                        ReplicaState.STOPPED,
                        "stopped because the supervisor failed",
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
                self._check_memory()
            self._escalate()
            self._restart_due()
            self._decide()
            if self.outcome is not None and not any(r.running for r in self.replicas):
                return
            self._write()
            self._wait(self._next_timeout())

    def _shutdown(self) -> None:
        """Leave nothing behind, then write the final status and let the watchdog go."""
        for replica in self.replicas:
            if replica.running and replica.pgid:
                kill_group(replica.pgid, signal.SIGKILL)
        self._kill_leftovers()
        deadline = time.monotonic() + 10
        while any(r.running for r in self.replicas) and time.monotonic() < deadline:
            self._reap()
            if any(r.running for r in self.replicas):
                time.sleep(0.02)
        self._reap()
        for replica in self.replicas:  # anything not decided by an exit (e.g. never started)
            st = replica.status
            if st.state in (ReplicaState.PENDING, ReplicaState.RUNNING, ReplicaState.RESTARTING):
                stop_as = replica.stop_as or ("StoppedByRun", ReplicaState.STOPPED, "the run ended before it finished")
                st.reason, st.state, st.message = stop_as
                if st.state == ReplicaState.SUCCEEDED and st.started_at is None:
                    st.state = ReplicaState.STOPPED
                st.finished_at = st.finished_at or time.time()
        if self.ports is not None:
            self.ports.close()
        state, reason, message = self.outcome or (RunState.FAILED, "SupervisorError", "the supervisor ended early")
        self.status.state, self.status.reason, self.status.message = state, reason, message
        self.status.finished_at = time.time()
        try:
            self._write(force=True)
        finally:
            self.watchdog.done()
        log(f"run {state.value} ({reason}): {message}")

    def _kill_leftovers(self) -> None:
        """Whatever still carries the run's PX_RUN_ID does not outlive the run: processes that
        left their replica's group (a new session, a daemon; adopted by us as subreaper).
        Adopted processes without it (say, the supervisor of a run started from a replica)
        are not this run's and are left alone."""
        import psutil

        for proc in run_processes(self.run_id, exclude=[self.watchdog.pid or 0, *self.by_pid]):
            try:
                log(f"killing leftover process {proc.pid} ({proc.name()})")
                proc.kill()
            except psutil.Error:
                pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jupyter_px.backends.local.supervisor",
        description="Run and watch the replicas of one local run (started by LocalBackend).",
    )
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--ready-fd", type=int, default=None, help="write 'ready' here once status.json has our pid")
    parser.add_argument("--foreground", action="store_true", help="do not fork into the background")
    args = parser.parse_args(argv)
    run_dir = args.run_dir.resolve()
    if not args.foreground and os.fork() != 0:
        os._exit(0)  # the submitter reaps this parent at once; the supervisor is nobody's child
    store = RunStore(run_dir.parent.parent)
    log(f"supervisor pid {os.getpid()} for run {run_dir.name}")
    return Supervisor(store, run_dir.name, args.ready_fd).run()


if __name__ == "__main__":
    sys.exit(main())
