"""A Slurm run's attempts: the job requeued as the run-level retry (`termination.max_retries`).

Slurm restarts a requeued job under the same id, running its batch script again from the start
(sbatch(1) `--requeue`: "When a job is requeued, the batch script is initiated from its
beginning"), and counts it (`restart_cnt` in `squeue --json`, `Restarts=` in `scontrol show job`,
`SLURM_RESTART_COUNT` in the job: sbatch(1) OUTPUT ENVIRONMENT VARIABLES). Each restart is the
run's next attempt, recorded as the local backend's gang restart records its attempts
(`runstore.models.AttemptRecord`: one format for every backend). A job of a run with retries is
submitted `--requeue` and `--signal=B:USR1@<checkpoint_grace_s>` (`script.requeue_options`), and
is requeued when:

* it nears its time limit: Slurm signals the batch shell, whose trap asks every replica for a
  checkpoint and then runs `scontrol requeue` (`task_entry.requeue`; `requeue.json` in the
  attempt's records says so first, so the replicas the requeue stops are not failures);
* a node of it fails: Slurm requeues a batch job that may be requeued by itself (sbatch(1)
  `--requeue`: "The job may be requeued ... after node failure"; slurm.conf(5) `JobRequeue`);
* it is preempted where the partition's PreemptMode is REQUEUE (slurm.conf(5) PreemptMode);
* a replica fails with a code the run retries (`Termination.retries`: Kubeflow's ExitCode policy
  by default): this follower runs `scontrol requeue`, as the local supervisor restarts the gang.

Slurm holds a requeued job back for the job credential's lifetime before it may start again
(slurm.conf(5) AuthInfo `cred_expire`: "This also controls how long a requeued job must wait
before starting again. The default value is 120 seconds"; NEWS for 14.11: "Set the delay time for
job requeue to the job credential lifetime ... This insures that prolog runs on every node").

Retries are counted here against `termination.max_retries`; a requeue Slurm makes beyond them
(a node failure in the last attempt) is cancelled, and the run says it ran out.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...runstore import ReplicaState, ReplicaStatus, RunStatus, metrics_tail
from ...runstore.checkpoints import all_checkpoints, newest_step
from ...runstore.models import AttemptRecord, CheckpointInfo
from ...topology import Topology
from ...topology.naming import ReplicaNames
from ...topology.termination import Termination
from ..outcome import Outcome
from .commands import SlurmCommandError, SlurmCommands
from .culprit import slurm_killed
from .handle import JobHandle
from .kills import NODE_FAIL

log = logging.getLogger(__name__)

#: How long a requeue asked for (by the batch script or this follower) may take to show in the
#: job's restart count before the failures it stopped are taken for what they are.
REQUEUE_WAIT_S = 60.0
#: Seconds between listings of the run's checkpoints for its status.
_CHECKPOINTS_EVERY_S = 2.0


class Requeues:
    """The attempts of one followed run: which one runs, whether a requeue is under way, and
    the records the status carries."""

    def __init__(
        self, run_dir: Path, handle: JobHandle, commands: SlurmCommands, topology: Topology, recorded: RunStatus
    ):
        self.run_dir, self.handle, self.commands = run_dir, handle, commands
        self.work = handle.work_dir(run_dir)
        self.termination = topology.termination or Termination()
        self.names = ReplicaNames.of(topology)
        self.max_attempts = 1 + self.termination.max_retries
        self.restarts = max(0, recorded.attempt - 1)  # a follower started again goes on where it was
        self.records: list[AttemptRecord] = list(recorded.attempts)
        self.asked_at: float | None = None  # when a requeue of the running attempt was asked for
        self.cause: AttemptRecord | None = None  # what ended the running attempt, when this follower knows
        self.checkpoints: list[CheckpointInfo] = list(recorded.checkpoints)
        self._checkpoints_at = 0.0

    @property
    def attempt(self) -> int:
        return self.restarts + 1

    def folder(self, restarts: int | None = None) -> Path:
        return self.handle.records_dir(self.run_dir, self.restarts if restarts is None else restarts)

    def _said(self, restarts: int | None = None) -> dict[str, Any] | None:
        """What the batch script's trap wrote (`requeue.json`), None when it did not run."""
        try:
            return dict(json.loads((self.folder(restarts) / "requeue.json").read_text()))
        except (OSError, ValueError):
            return None

    # ---- while an attempt runs ------------------------------------------------------------------
    def under_way(self) -> bool:
        """A requeue of the running attempt was asked for and Slurm has not restarted the job yet:
        the replicas it stops are not failures of the run (for `REQUEUE_WAIT_S`)."""
        if self.asked_at is None:
            said = self._said()
            if not said or not said.get("requeue"):
                return False
            self.asked_at = float(said.get("asked_at") or time.time())
        return time.time() - self.asked_at < REQUEUE_WAIT_S

    def retry(self, outcome: Outcome, replicas: Sequence[ReplicaStatus], job_restarts: int | None) -> str | None:
        """The run would end with `outcome` (a failure): None when the job is requeued instead
        (by Slurm already, or now by `scontrol requeue`), else what to add to its message (why it
        was not retried), as the local backend says it."""
        if not self.termination.max_retries:
            return ""
        failed = [r for r in replicas if r.state == ReplicaState.FAILED]
        culprit = next((r for r in failed if self.names.label(r.role, r.index) == outcome.cause), None)
        if culprit is None:
            return ""
        record = self._record_of(culprit)
        if not (slurm_killed(culprit) or self.termination.retries(culprit.exit_code)):
            rule = self.termination.rule()
            return f"; not retried: exit code {culprit.exit_code} of {record.failed} is permanent ({rule})"
        if self.attempt >= self.max_attempts:
            self.cause = record
            return "; " + self.out_of_retries()
        self.cause, self.asked_at = record, time.time()
        if job_restarts is not None and job_restarts > self.restarts:
            return None  # Slurm requeued it already (its node failed)
        try:
            self.commands.requeue(self.handle.ref)
        except SlurmCommandError as error:
            shown = self.commands.show_job(self.handle.ref) or []
            if any(int(part.get("Restarts") or 0) > self.restarts for part in shown):
                return None  # Slurm requeued it meanwhile
            self.asked_at = None
            log.warning("run %s: %s", self.handle.job_name, error)
            return f"; not retried: {error}"
        log.info("job %s: attempt %d failed (%s); requeued", self.handle.ref, self.attempt, record.describe())
        return None

    def ran_out(self) -> tuple[str, str]:
        """The run's reason and message when Slurm restarted the job beyond its retries."""
        failed = self.records[-1]
        return str(failed.reason or "Requeued"), f"{failed.describe()}; {self.out_of_retries(failed.attempt)}"

    def ran_out_note(self) -> str:
        """What a run Slurm ended (a TIMEOUT not requeued) adds when its retries were spent."""
        if not self.termination.max_retries or self.attempt < self.max_attempts:
            return ""
        return "; " + self.out_of_retries()

    def out_of_retries(self, attempt: int | None = None) -> str:
        return (
            f"out of retries: attempt {attempt or self.attempt} of {self.max_attempts} failed "
            f"(termination.max_retries: {self.termination.max_retries})"
        )

    def _record_of(self, replica: ReplicaStatus) -> AttemptRecord:
        said = f"requeued ({replica.reason}: {replica.message})" if slurm_killed(replica) else None
        return AttemptRecord(
            attempt=self.attempt,
            failed=self.names.label(replica.role, replica.index),
            reason=replica.reason,
            exit_code=None if said else replica.exit_code,
            signal=None if said else replica.signal,
            message=said or replica.message,
        )

    # ---- Slurm restarted the job ---------------------------------------------------------------
    def begin(self, restarts: int, replicas: Sequence[ReplicaStatus]) -> bool:
        """The job was restarted (`restarts` times): record how the last attempt ended and begin
        the next (its boundary marked in every replica's log). False when that is beyond the
        run's retries: the job is then to be cancelled."""
        said = self._said() is not None  # the batch script's word (TimeLimit, Preempted) first
        record = self._slurm_cause(replicas) if said else (self.cause or self._slurm_cause(replicas))
        record.attempt, record.finished_at, record.retried = self.attempt, time.time(), True
        record.step = last_step(self.work / "metrics")
        if not self.records:
            self.records.append(AttemptRecord(attempt=1))
        ran = self.records[-1]  # when it started, from which step, where its logs begin
        kept = {"started_at": ran.started_at, "resumed_from": ran.resumed_from, "log_offsets": ran.log_offsets}
        self.records[-1] = record.model_copy(update=kept)
        self.restarts, self.asked_at, self.cause = restarts, None, None
        if self.attempt > self.max_attempts:
            self.records[-1].retried = False
            return False
        step = newest_step(str(self.work / "outputs"))
        resumed = f"from step {step:,}" if step is not None else "from the start"
        offsets = self._mark_logs(f"--- attempt {self.attempt} ({resumed}): {record.describe()} ---\n")
        self.records.append(AttemptRecord(attempt=self.attempt, resumed_from=step, log_offsets=offsets))
        log.info("job %s restarted: attempt %d of %d, %s", self.handle.ref, self.attempt, self.max_attempts, resumed)
        return True

    def _slurm_cause(self, replicas: Sequence[ReplicaStatus]) -> AttemptRecord:
        """What ended an attempt this follower did not requeue: the batch script's trap (the time
        limit), a node failure, else Slurm's own requeue (a preemption, an administrator)."""
        job = f"Slurm job {self.handle.ref}"
        said = self._said()
        if said is not None:
            reason = str(said.get("reason") or "TimeLimit")
            return AttemptRecord(attempt=self.attempt, failed=job, reason=reason, message=f"requeued ({reason})")
        lost = next((r for r in replicas if r.state == ReplicaState.FAILED and r.reason == NODE_FAIL), None)
        if lost is not None:
            return self._record_of(lost)
        return AttemptRecord(
            attempt=self.attempt,
            failed=job,
            reason="Requeued",
            message="requeued by Slurm (a preemption, a node failure or scontrol requeue)",
        )

    def _mark_logs(self, line: str) -> dict[str, int]:
        """Append the attempt's boundary to every replica's log; where each log of it begins."""
        offsets = {}
        for role, index in self.handle.tasks:
            try:
                with open(self.work / "logs" / f"{role}-{index}.log", "a", encoding="utf-8") as handle:
                    handle.write(line)
                    offsets[f"{role}-{index}"] = handle.tell()
            except OSError as error:  # a full disk must not stop the attempt
                log.warning("%s-%s: cannot mark the attempt in its log: %s", role, index, error)
        return offsets

    # ---- the status -----------------------------------------------------------------------------
    def stamp(self, status: RunStatus, job_start: float | None) -> None:
        """The attempt, its records and the newest checkpoints, into a status being written."""
        status.attempt, status.max_attempts = self.attempt, self.max_attempts
        if self.records and self.records[0].started_at is None:
            self.records[0].started_at = status.started_at
        if self.records:
            current = self.records[-1]
            if current.attempt == self.attempt and current.started_at is None and job_start and self.restarts:
                current.started_at = job_start
            if current.attempt == self.attempt and self.restarts:
                self._resumed_from(current)
        status.attempts = [record.model_copy() for record in self.records]
        if time.monotonic() - self._checkpoints_at >= _CHECKPOINTS_EVERY_S:
            self._checkpoints_at = time.monotonic()
            newest = {c.scope: c for c in all_checkpoints(str(self.work / "outputs"))}
            self.checkpoints = [
                CheckpointInfo(scope=c.scope, step=c.step, time=c.time, size=c.size) for c in newest.values()
            ]
        status.checkpoints = list(self.checkpoints)

    def _resumed_from(self, current: AttemptRecord) -> None:
        """The step the attempt's replicas resume from, as its batch script decided it."""
        try:
            decided = json.loads((self.folder() / "attempt.json").read_text())
        except (OSError, ValueError):
            return
        current.resumed_from = decided.get("resume_at")

    def headline(self) -> str:
        """`Requeued (TimeLimit), attempt 2 of 3, resumed at step 1,200: ` while a later attempt
        runs ("" in the first)."""
        if not self.restarts or len(self.records) < 2:
            return ""
        ended, current = self.records[-2], self.records[-1]
        step = current.resumed_from
        resumed = f"resumed at step {step:,}" if step is not None else "from the start"
        return f"Requeued ({ended.reason}), attempt {self.attempt} of {self.max_attempts}, {resumed}: "


def last_step(metrics: Path) -> int | None:
    """The last step any replica logged (the tail of each metrics file)."""
    try:
        return metrics_tail.last_step(metrics / name for name in os.listdir(metrics) if name.endswith(".jsonl"))
    except OSError:
        return None
