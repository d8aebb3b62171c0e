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

from ...runstore import ReplicaState, RunPaths, RunStatus, metrics_tail
from ...runstore.checkpoints import RESUME_AT_ENV, all_checkpoints, newest_step
from ...runstore.models import AttemptRecord, CheckpointInfo
from ...topology import Topology
from ...topology.termination import Termination
from ..gang_retry import judge, record_failure
from ..outcome import Outcome
from . import policy
from .config import MASTER_HEAD_START_S
from .launcher import LaunchPlan
from .ports import PortReservation
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

    def _prepare(self) -> None: ...
    def _spawn(self, *replicas: Replica) -> None: ...
    def _stop_replica(self, replica: Replica, ending: Ending) -> None: ...


class Attempts:
    """The supervisor's attempts: decides a retry on a failure and starts the next attempt."""

    def __init__(self, supervisor: Supervisor):
        self.termination = supervisor.topology.termination or Termination()
        self.outputs = str(supervisor.paths.outputs_dir)
        supervisor.status.max_attempts = 1 + self.termination.max_retries
        self.pending: AttemptRecord | None = None  # a failed attempt whose gang is being stopped
        self._checkpoints_seen: tuple[tuple[str, float], ...] | None = None

    # ---- a replica failed --------------------------------------------------------------------
    def on_failure(self, sup: Supervisor, outcome: Outcome) -> Outcome | None:
        """The run would fail with `outcome`: None when the whole gang starts again instead
        (or is already being stopped to), else the outcome, saying why it was not retried."""
        if self.pending is not None:
            return None
        if self.termination.max_retries == 0:
            return outcome
        failed = [r.status for r in sup.replicas if r.status.state == ReplicaState.FAILED]
        status = sup.status
        culprit, why = judge(self.termination, failed, status.attempt, status.max_attempts)
        if not status.attempts:  # the first attempt's record, made when it fails
            status.attempts.append(AttemptRecord(attempt=1, started_at=status.started_at))
        record = status.attempts[-1]
        record_failure(record, culprit, last_step(sup))
        sup.writer.dirty = True
        if why is not None:
            return dataclasses.replace(outcome, message=f"{outcome.message}; {why}")
        record.retried = True
        self.pending = record
        nxt = status.attempt + 1
        log.info("attempt %d failed (%s); stopping every replica to start attempt %d", status.attempt, culprit.key, nxt)
        ending = Ending.by_run(ReplicaState.STOPPED, f"stopped to start the run again (attempt {nxt})")
        for replica in sup.replicas:
            sup._stop_replica(replica, ending)
        status.message = f"attempt {status.attempt} failed: {record.describe()}; starting attempt {nxt}"
        return None

    # ---- every turn of the supervisor's loop --------------------------------------------------
    def tick(self, sup: Supervisor) -> None:
        """Start the next attempt once the failed one's processes are all gone; list new checkpoints."""
        self._list_checkpoints(sup)
        if self.pending is None or sup.outcome is not None or any(r.running for r in sup.replicas):
            return
        record, self.pending = self.pending, None
        status = sup.status
        flushed = last_step(sup)  # what its replicas flushed as they were stopped counts too
        if flushed is not None and (record.step is None or flushed > record.step):
            record.step = flushed
        status.attempt += 1
        step = newest_step(self.outputs)
        resumed = f"from step {step:,}" if step is not None else "from the start"
        offsets = _mark_logs(sup, f"--- attempt {status.attempt} ({resumed}): {record.describe()} ---\n")
        status.attempts.append(
            AttemptRecord(attempt=status.attempt, started_at=time.time(), resumed_from=step, log_offsets=offsets)
        )
        for replica in sup.replicas:
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
        status.message = f"attempt {status.attempt} of {status.max_attempts}, {resumed}: {record.describe()}"
        sup.writer.write(force=True)

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
    order = sorted(sup.replicas, key=lambda r: (policy.start_rank(r.spec.role, is_mpi=is_mpi), r.spec.index))
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
