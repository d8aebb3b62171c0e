"""The run-level retry of a local run (`termination.max_retries`): a gang restart.

A DDP rank that dies cannot be replaced on its own: its peers are inside a collective with it
and a new process cannot join the old process group. So when a replica fails and the run has
retries left, the supervisor stops every replica of the run (as it does when a run fails),
waits until every process is gone, and starts the whole gang again as the next attempt: fresh
ports (a new rendezvous: a new MASTER_PORT, TF_CONFIG, ...), `PX_ATTEMPT` in each replica's
environment, the same outputs, so each replica's `tracking.load_checkpoint()` returns its newest
complete checkpoint. torchrun's elastic agent does the same for its workers (`--max-restarts`,
torch/distributed/elastic/agent/server/api.py `_invoke_run`: any failed worker restarts the whole
worker group), and JobSet's `failurePolicy.maxRestarts` for a job's pods.

Which failures are retried is `Termination.retries` (Kubeflow's ExitCode policy by default). A
rank killed by a signal usually takes its peers down with it (gloo and NCCL raise in the
collective: exit 1), and their exits may be reaped in the same turn as its own; so the
attempt is retried when any failure seen together with the first is retryable.

Logs: every attempt appends to the replica's one log after a marked line (`--- attempt 2 ...`),
as restarts of one replica already do, so a follower reading by offset goes on without a gap;
each attempt's record keeps the byte where each replica's log of it begins (`log_offsets`), so
a view can show one attempt's log alone. The status carries the attempt, the most attempts, the
history of failed attempts (which replica, why, at which step, resumed from which checkpoint)
and the checkpoints listed from the outputs.

Kept out of `supervisor.py` (its hooks are `on_failure` and `tick`); what it calls there is the
supervisor's own preparation and start-up, so an attempt starts exactly like the first.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from typing import Protocol

from ...processes.ports import PortReservation
from ...runstore import ReplicaState, ReplicaStatus, RunPaths, RunStatus, metrics_tail
from ...runstore.checkpoints import RESUME_AT_ENV, SHARED_SCOPE, all_checkpoints, newest_step
from ...runstore.models import AttemptRecord, CheckpointInfo, Reason
from ...topology import Topology
from ...topology.termination import Termination
from ..gang_retry import judge, record_failure
from ..outcome import Outcome
from . import policy
from .config import MASTER_HEAD_START_S
from .elastic import Membership
from .launcher import LaunchPlan
from .replica import Ending, Replica
from .resources import Machine
from .spawners import Spawner
from .status_writer import StatusWriter
from .wakeup import SignalWakeup

log = logging.getLogger(__name__)

#: The environment variable that tells each replica which attempt it is (1, 2, ...).
ATTEMPT_ENV = "PX_ATTEMPT"


class Supervisor(Protocol):
    """What of the run's supervisor (`supervisor.Supervisor`) an attempt uses: its state, its
    preparation and its start-up, so an attempt starts exactly like the first."""

    topology: Topology
    paths: RunPaths
    status: RunStatus
    replicas: list[Replica]
    outcome: Outcome | None
    writer: StatusWriter
    ports: PortReservation | None
    plan: LaunchPlan | None
    spawner: Spawner
    machine: Machine | None
    wakeup: SignalWakeup
    attempts: Attempts

    def _prepare(self) -> None: ...
    def _spawn(self, *replicas: Replica) -> None: ...
    def _stop_replica(self, replica: Replica, ending: Ending) -> None: ...


class Attempts:
    """The supervisor's attempts: decides a retry on a failure and starts the next attempt;
    for elastic workers, re-forms the gang without a lost worker and with a returning one."""

    def __init__(self, supervisor: Supervisor):
        self.termination = supervisor.topology.termination or Termination()
        self.outputs = str(supervisor.paths.outputs_dir)
        self.allowed = 1 + self.termination.max_retries  # attempts the run's retries allow
        self.retried = 0  # retries used (a re-forming of elastic workers uses none)
        supervisor.status.max_attempts = self.allowed
        self.pending: AttemptRecord | None = None  # a failed attempt whose gang is being stopped
        self._checkpoints_seen: tuple[tuple[str, float], ...] | None = None
        section = supervisor.topology.replicas_section
        self.membership = Membership(section.min_workers, section.n_workers) if section.min_workers else None
        self.below_minimum: ReplicaStatus | None = None  # the elastic worker whose loss ended the run
        self.left_as: dict[int, str] = {}  # an elastic worker that left -> how (for its final message)

    def absent(self) -> frozenset[int]:
        """Workers the current attempt goes on without (elastic workers)."""
        return frozenset(self.membership.absent) if self.membership else frozenset()

    def takes_part(self, replica: Replica) -> bool:
        members = self.membership
        return members is None or replica.spec.role != "worker" or replica.spec.index not in members.absent

    @staticmethod
    def _worker(sup: Supervisor, index: int) -> Replica:
        return next(r for r in sup.replicas if r.spec.role == "worker" and r.spec.index == index)

    # ---- a replica failed --------------------------------------------------------------------
    def on_failure(self, sup: Supervisor, outcome: Outcome) -> Outcome | None:
        """The run would fail with `outcome`: None when the whole gang starts again instead
        (or is already being stopped to), else the outcome, saying why it was not retried."""
        if self.pending is not None:
            return None
        if self.below_minimum is not None:  # an elastic worker lost: the run cannot go on without it
            st = self.below_minimum
            return dataclasses.replace(outcome, message=f"{st.key} failed ({st.reason}): {st.message}", cause=st.key)
        if self.termination.max_retries == 0:
            return outcome
        failed = [r.status for r in sup.replicas if r.status.state == ReplicaState.FAILED]
        culprit, why = judge(self.termination, failed, 1 + self.retried, self.allowed)
        record = self._current(sup)
        record_failure(record, culprit, last_step(sup))
        sup.writer.dirty = True
        if why is not None:
            return dataclasses.replace(outcome, message=f"{outcome.message}; {why}")
        self.retried += 1
        self._stop_gang(sup, record, "failed")
        return None

    def leaves(self, sup: Supervisor, replica: Replica, info_exit_code: int) -> bool:
        """Elastic workers: a worker that failed in a way that is retried (killed, OOMKilled),
        when the run has no retries left, leaves it, and the gang starts again without it,
        if at least the minimum of workers remain; else it fails the run, named as its cause.
        True: this decided its state (Stopped, it left; or Failed, below the minimum)."""
        members = self.membership
        if members is None or replica.spec.role != "worker" or self.pending is not None or sup.outcome is not None:
            return False
        if not self.termination.retries(info_exit_code):
            return False  # a permanent failure: the run fails
        st, spec = replica.status, replica.spec
        if 1 + self.retried < self.allowed:  # the whole gang starts again with it (on_failure)
            st.state = ReplicaState.FAILED  # not alone: its restart policy is for coming back
            return True
        if not members.can_lose(1):  # not restarted alone either: it could not rejoin its peers
            st.state = ReplicaState.FAILED
            st.message = (
                f"{st.message or 'failed'}; the run cannot go on with fewer than {members.minimum} workers "
                f"(n_workers: '{members.minimum}:{members.maximum}')"
            )
            self.below_minimum = st
            return True
        back = policy.should_restart(
            spec.restart_policy,
            failed=True,
            exit_code=info_exit_code,
            restarts=st.restarts,
            max_restarts=spec.max_restarts,
            decides_run=False,
        )
        record = self._current(sup)  # with the workers it started with
        members.leave(spec.index, time.monotonic() + policy.restart_delay(st.restarts) if back else None)
        record_failure(record, st, last_step(sup))
        st.state, st.reason = ReplicaState.STOPPED, Reason.LEFT_RUN
        restarts = f"{st.restarts} of {spec.max_restarts} restarts"
        comes_back = (
            f"returns at the next checkpoint (restart {st.restarts + 1} of {spec.max_restarts})"
            if back
            else f"does not return (restart_policy {spec.restart_policy}, {restarts})"
        )
        self.left_as[spec.index] = f"{st.message or 'failed'}; left the run, which went on with {members.words()}"
        st.message = f"{self.left_as[spec.index]}; {comes_back}"
        log.info("%s left the run: %s", replica.key, st.message)
        sup.status.max_attempts += 1
        self._stop_gang(sup, record, "lost a worker")
        return True

    def _current(self, sup: Supervisor) -> AttemptRecord:
        """The record of the attempt running (the first one's is made when it ends)."""
        status = sup.status
        if not status.attempts:
            status.attempts.append(AttemptRecord(attempt=1, started_at=status.started_at, workers=self._workers()))
        return status.attempts[-1]

    def _workers(self) -> int | None:
        """How many workers take part now (elastic workers), else None."""
        return self.membership.present if self.membership else None

    def _stop_gang(self, sup: Supervisor, record: AttemptRecord, what: str) -> None:
        """Stop every replica of the attempt `record`; the next starts once they are gone (tick)."""
        status = sup.status
        record.retried = True
        self.pending = record
        nxt = status.attempt + 1
        log.info(
            "attempt %d %s (%s); stopping its replicas to start attempt %d",
            status.attempt,
            what,
            record.describe(),
            nxt,
        )
        ending = Ending.by_run(ReplicaState.STOPPED, f"stopped to start the run again (attempt {nxt})")
        for replica in sup.replicas:
            if self.takes_part(replica):
                sup._stop_replica(replica, ending)
        status.message = f"attempt {status.attempt} {what}: {record.describe()}; starting attempt {nxt}"
        sup.writer.dirty = True

    def _return_due(self, sup: Supervisor) -> None:
        """Elastic workers: an absent worker whose back-off is over comes back when the gang
        has saved a checkpoint since this attempt started (or the run saves none)."""
        members = self.membership
        if members is None or self.pending is not None or sup.outcome is not None:
            return
        due = members.due()
        if not due:
            return
        record = self._current(sup)
        checkpoints = all_checkpoints(self.outputs)
        if checkpoints and not any(c.time >= (record.started_at or 0.0) for c in checkpoints):
            return  # nothing saved since this attempt started: re-forming now would lose its steps
        for index in due:
            members.rejoin(index)
            self._worker(sup, index).status.restarts += 1
        names = ", ".join(f"worker-{i}" for i in due)
        record.finished_at, record.returned, record.step = time.time(), names, last_step(sup)
        log.info("%s returned to the run", names)
        sup.status.max_attempts += 1
        self._stop_gang(sup, record, f"takes {names} back")

    def ended(self, sup: Supervisor) -> None:
        """The run is over: an elastic worker still waiting to come back says it did not."""
        if self.membership is None:
            return
        for index in self.membership.returns:
            self._worker(sup, index).status.message = f"{self.left_as[index]}; the run ended before it came back"

    # ---- every turn of the supervisor's loop --------------------------------------------------
    def tick(self, sup: Supervisor) -> None:
        """Start the next attempt once the ended one's processes are all gone; list new
        checkpoints; take back an elastic worker whose return is due."""
        self._list_checkpoints(sup)
        self._return_due(sup)
        if self.pending is None or sup.outcome is not None or any(r.running for r in sup.replicas):
            return
        record, self.pending = self.pending, None
        status = sup.status
        flushed = last_step(sup)  # what its replicas flushed as they were stopped counts too
        if flushed is not None and (record.step is None or flushed > record.step):
            record.step = flushed
        status.attempt += 1
        step = newest_step(self.outputs, self._resume_scopes(sup))
        resumed = f"from step {step:,}" if step is not None else "from the start"
        offsets = _mark_logs(sup, f"--- attempt {status.attempt} ({resumed}): {record.describe()} ---\n")
        status.attempts.append(
            AttemptRecord(
                attempt=status.attempt,
                started_at=time.time(),
                resumed_from=step,
                log_offsets=offsets,
                workers=self._workers(),
            )
        )
        for replica in sup.replicas:
            if not self.takes_part(replica):
                continue  # an elastic worker that left keeps its status until it returns
            st = replica.status
            st.state, st.pid, st.started_at, st.finished_at = ReplicaState.PENDING, None, None, None
            st.exit_code = st.signal = st.failure = st.reason = st.message = None
            replica.ending = replica.last_exit = None
            replica.restart_at = replica.kill_at = replica.term_at = replica.finish_by = None
        if sup.ports is not None:
            sup.ports.close()  # a new rendezvous: fresh ports for every replica
        sup._prepare()
        assert sup.plan is not None
        sup.plan.base_env[ATTEMPT_ENV] = str(status.attempt)
        if step is not None:  # every replica resumes at the same step
            sup.plan.base_env[RESUME_AT_ENV] = str(step)
        log.info("attempt %d of %d starts %s", status.attempt, status.max_attempts, resumed)
        start_gang(sup)
        with_workers = f" with {self.membership.words()}" if self.membership else ""
        attempt = f"attempt {status.attempt} of {status.max_attempts}{with_workers}"
        status.message = f"{attempt}, {resumed}: {record.describe()}"
        sup.writer.write(force=True)

    def _resume_scopes(self, sup: Supervisor) -> set[str] | None:
        """Whose checkpoints set the step an attempt resumes from: every scope's, except with
        elastic workers, where the ranks change as workers leave and come back: the run's shared
        checkpoints when it saves any, else those of the replicas taking part."""
        if self.membership is None:
            return None
        checkpoints = all_checkpoints(self.outputs)
        if any(c.scope == SHARED_SCOPE for c in checkpoints):
            return {SHARED_SCOPE}
        return {r.key for r in sup.replicas if self.takes_part(r)}

    def _list_checkpoints(self, sup: Supervisor) -> None:
        """The status's checkpoints, read again when a scope's folder changed: the newest of each
        replica (and the shared one), so a wide run's status stays small."""
        root = os.path.join(self.outputs, "checkpoints")
        try:
            seen = tuple((e.name, e.stat().st_mtime) for e in os.scandir(root) if e.is_dir())
        except OSError:
            return
        if seen == self._checkpoints_seen:
            return
        self._checkpoints_seen = seen
        newest = {c.scope: c for c in all_checkpoints(self.outputs)}  # by step: the last of a scope is its newest
        sup.status.checkpoints = [
            CheckpointInfo(scope=c.scope, step=c.step, time=c.time, size=c.size) for c in newest.values()
        ]
        sup.writer.dirty = True


def start_gang(sup: Supervisor) -> None:
    """Start every replica of the run: forked (or handed to a spawn-ahead pool) together when
    warm (nothing to import, no head start to give), else one by one with the master's head
    start (`policy.head_start`). Then the pool, once used, is let go, and the run's `launch` says
    how many replicas it served (`Spawner.finish_gang`)."""
    is_mpi = sup.topology.is_mpi
    taking_part = [r for r in sup.replicas if sup.attempts.takes_part(r)]
    order = sorted(taking_part, key=lambda r: (policy.start_rank(r.spec.role, is_mpi=is_mpi), r.spec.index))
    if sup.spawner.warm:
        sup._spawn(*order)
    else:
        for replica in order:
            sup._spawn(replica)
            if replica.spec.role == "master" and len(sup.replicas) > 1:
                _head_start(sup)
    said = sup.spawner.finish_gang(sup.topology.framework)
    if said:
        sup.status.launch = f"{sup.status.launch or 'warm'}; {said}"


def _head_start(sup: Supervisor) -> None:
    """Let the master get ahead before the workers compete with it for the cores (`policy.head_start`)."""
    assert sup.machine is not None
    processes = len(sup.replicas) * sup.topology.environment.processes_per_replica
    delay = policy.head_start(sup.topology.framework, processes, len(sup.machine.cpus), MASTER_HEAD_START_S)
    if delay > 0:
        sup.wakeup.wait(delay)


def _mark_logs(sup: Supervisor, line: str) -> dict[str, int]:
    """Append the attempt's boundary to every replica's log; where each log of it begins."""
    offsets = {}
    for replica in sup.replicas:
        path = sup.paths.log(replica.spec.role, replica.spec.index)
        try:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(line)
                offsets[replica.key] = handle.tell()
        except OSError as error:  # a full disk must not stop the attempt
            log.warning("%s: cannot mark the attempt in its log: %s", replica.key, error)
    return offsets


def last_step(sup: Supervisor) -> int | None:
    """The last step any replica of the run logged (the tail of its metrics files)."""
    files = []
    for replica in sup.replicas:
        path = sup.paths.metrics(replica.spec.role, replica.spec.index)
        folder, name = path.parent, path.name.split(".")[0]
        try:
            files += [folder / f for f in os.listdir(folder) if f.split(".")[0] == name]
        except OSError:
            continue
    return metrics_tail.last_step(files)
