"""`python -m jupyter_px.backends.slurm.follower RUN_DIR`: the lifecycle owner of one Slurm run.

Started detached by submit (`jupyter_px.processes.detached`: its identity is recorded as the run's owner
before it may run), it outlives the kernel and the Jupyter server, as the job does, and it is the
only writer of the run's status. Every poll it reads the shared queue snapshot (`queue.py`: one
`squeue` for all followed runs) and the tasks' records, and writes:

* PENDING with Slurm's reason and the job's place in its partition's queue while it waits;
* RUNNING per task as each task checks in, with the time left of the job's time limit;
* each replica's end from its task's exit record (exit code, signal, OOMKilled);
* the run's end by the same success policy as every backend (`backends/outcome.py`): the master
  decides (else every worker); the first failing replica fails the run. Replicas still running
  then are stopped and recorded so: SIGTERM to the tasks (`scancel --signal=TERM`, so tracking
  flushes what it accepted), then, once they have ended or `PX_STOP_GRACE_S` has passed, the
  job (`scancel`). A user's stop (`slurm-stop`, written by `SlurmBackend.stop`) takes the same path;
* an end Slurm decided (TIMEOUT, CANCELLED by someone else, NODE_FAIL, PREEMPTED, ...) in Slurm's
  words, with who cancelled when `sacct` can say.

Its life as a process (one per run, the lock, the start handshake) is every follower's
(`backends/follower_process.py`). Restartable: a new one rebuilds everything from the run
directory. It ends when the run has finished, when its directory is gone, and when the Slurm
commands have not answered for `follower_give_up_s` (the run keeps its state, reason
LostContact; a keeper follows it again). With `shared_dir`, it also copies the tasks' files back
into the run store (`mirror.py`).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from dataclasses import dataclass
from typing import Any

from ...runstore import ReplicaState, ReplicaStatus, RunState, RunStatus, RunStore, read_tail
from ...runstore.models import Reason
from ...topology import parse_topology
from ...topology.naming import ReplicaNames
from .. import follower_process
from ..collective_blame import Named
from ..failures import code_failure
from . import mirror
from .commands import SlurmCommands, SlurmUnreachable
from .culprit import blame, explained_by_its_node, mark_consequences, slurm_killed
from .default_memory import memory_limit, memory_limits
from .handle import BATCH_OUTPUT, FOLLOWER, STOP_FILE, JobHandle
from .hang_watch import HangWatch
from .job_control import JOB_END_WAIT_S, JobControl
from .kills import JobLayout, SlurmKill, killed_tasks
from .queue import JobView, QueueWatch
from .replicas import Ending, Hit, RecordReader, Records, ended_replica, killed_replica, unrecorded_end
from .requeues import Requeues
from .settings import load_settings
from .states import ACTIVE, STARTED, base_state, minutes_text, pending_message, running_message, slurm_end

log = logging.getLogger(__name__)

#: Roles that never finish by themselves: stopped as soon as the run has succeeded.
SERVERS = ("ps", "evaluator")
#: After the run succeeded, seconds a worker still running gets to finish by itself (as locally).
COMPLETION_GRACE_S = float(os.environ.get("PX_COMPLETION_GRACE_S") or 5.0)
#: A task that ended by a signal this follower did not send is acted on only once a queue snapshot
#: taken this long after it was seen says the job is not ending: Slurm's own TERM (time limit,
#: scancel by someone) shows in the job's state (COMPLETING, then CANCELLED or TIMEOUT) by then.
FOREIGN_SIGNAL_WAIT_S = 3.0
#: ... and while that snapshot says COMPLETING, until the job has left the queue and its final state
#: names the signal's sender, for at most this long: a cancelled job stays COMPLETING until its
#: last process has gone, up to the site's KillWait after the TERM (a child that ignores it).
COMPLETING_WAIT_S = 120.0
#: A replica that failed by itself is held this long before it decides the run: when Slurm
#: killed a peer (its memory, its node), the peer's failure reaches the batch output or its
#: record a moment after this one's (gloo notices a dead peer at once), and the peer is the cause.
CAUSE_WAIT_S = 5.0
#: At the end, how long to wait for the records of tasks that have started (a shared filesystem
#: may show a file written on a node a moment later).
RECORDS_WAIT_S = 5.0
#: How often the follower looks at the task records and the stop request.
TICK_S = 0.2


@dataclass
class RunEnding:
    """The run's decided end, and what it makes of the replicas still running."""

    state: RunState
    reason: str
    message: str
    others: Ending
    term_at: float  # time.time() when the tasks get SIGTERM
    #: what the replicas that failed beside a Slurm kill read ("stopped because worker-0 was OOMKilled")
    consequence: str | None = None
    #: a collective's timeout with the replicas it waited for named: what each ended replica reads
    named: Named | None = None


class Follower:
    def __init__(self, store: RunStore, run_id: str):
        self.store, self.run_id = store, run_id
        self.paths = store.paths(run_id)
        self.run_dir = self.paths.root
        self.handle = JobHandle.load(self.run_dir)
        self.settings = load_settings()
        self.commands = SlurmCommands(self.handle.slurm_conf)
        self.queue = QueueWatch(store.home, self.commands, self.settings.poll_interval_s, reader=run_id)
        self.topology = parse_topology(store.record(run_id).topology)
        self.work = self.handle.work_dir(self.run_dir)
        recorded = store.status(run_id)
        self.attempts = Requeues(self.run_dir, self.handle, self.commands, self.topology, recorded)
        self.control = JobControl(run_id, self.handle, self.commands, self.work)
        self.reader = RecordReader(self.attempts.folder(), self.control.batch_output, self.control.batch_offset)
        self.memory = {(s.role, s.index): memory_limit(s) for s in self.topology.replicas()}
        self.names = ReplicaNames.of(self.topology)
        self.limits = memory_limits(self.topology, self.memory, self.handle.default_mem_per_cpu_mib)
        self.component_ids: dict[int, int] | None = None  # component job id -> index, from the queue
        self.kill_seen: dict[int, float] = {}  # procid -> when the batch output saying Slurm killed it was written
        self.failed_since: dict[int, float] = {}  # when a replica was first seen Failed (time.time())
        self.snapshot_at = 0.0  # when the queue snapshot that gave `self.job` was taken
        self.ending: RunEnding | None = None
        self.term_sent_at: float | None = None
        #: the tasks that had ended by themselves when the ending was decided: never "stopped by us"
        self.ended_before: set[int] = set()
        self.killed_at: float | None = None
        self.lost_since: float | None = None
        self.job: JobView | None = None
        self.last_state: str | None = None  # the job's state when last seen in a snapshot
        self.last_snapshot = 0.0  # when the snapshot last looked at was taken
        self.owner, self.started_at = recorded.owner, recorded.started_at
        self.hangs = HangWatch(self.paths, self.handle)  # stalls; the rank a collective's timeout waited for

    # ---- reading -----------------------------------------------------------------------------
    def _records(self) -> Records:
        return self.reader.read()

    def _kills(self, records: Records) -> dict[int, SlurmKill]:
        """The tasks Slurm says it killed (the batch output), by procid."""
        components = self.handle.components or [len(self.handle.tasks)]
        layout = JobLayout.of(self.handle.job_id, components, records.starts, self.component_ids)
        kills = killed_tasks(records.says, layout)
        now = time.time()  # Slurm's kill was written no later than the batch output was: what decides
        for procid in kills:  # the cause (`culprit.SLACK_S`) is when it happened, not when it was read
            self.kill_seen.setdefault(procid, min(now, records.said_at or now))
        return kills

    def _hit(self, procid: int, records: Records, kills: dict[int, SlurmKill]) -> Hit:
        role, index = self.handle.tasks[procid]
        kill = kills.get(procid)
        node = (records.starts.get(procid) or {}).get("node")
        together = tuple(
            f"{self.handle.tasks[p][0]}-{self.handle.tasks[p][1]}"
            for p, other in sorted(kills.items())
            if other == kill
        )
        limit = minutes_text(self.job.time_limit_min) if self.job else None
        failed = records.says.node_failures
        return Hit(kill, node or (kill.node if kill else None), together, self.memory.get((role, index)), limit, failed)

    def _replicas(self, records: Records, final: bool, slurm_state: str | None) -> list[ReplicaStatus]:
        out = []
        job = self.job
        others = self.ending.others if self.ending else None
        kills = self._kills(records)
        for procid, (role, index) in enumerate(self.handle.tasks):
            replica = ReplicaStatus(role=role, index=index, memory_limit_mib=self.limits.get((role, index)))
            start = records.starts.get(procid)
            if start is not None:
                replica.started_at = start.get("started_at")
                replica.address = f"{start.get('node')}:{start.get('port')}"
            end = records.exits.get(procid)
            hit = self._hit(procid, records, kills)
            if end is not None:
                by_us = others if self.ending is not None and procid not in self.ended_before else None
                ended_replica(replica, end, hit=hit, stopped_by_us=by_us, slurm_state=slurm_state)
                if replica.reason == Reason.ERROR:  # what its code raised, and where (as locally)
                    said = code_failure(self.work, role, index, replica.started_at, replica.message)
                    replica.failure, replica.message = said
            elif hit.kill is not None:
                killed_replica(replica, hit, self.kill_seen[procid])
            elif final:
                unrecorded_end(replica, start is not None, others, slurm_state, hit)
                replica.finished_at = time.time()
            elif start is not None:
                replica.state = ReplicaState.RUNNING
            elif job is not None and job.state == "PENDING":
                replica.reason = job.reason or None
            elif job is not None and job.state in STARTED:
                replica.reason, replica.message = "Starting", "the job runs; its task has not started yet"
            out.append(replica)
        if self.ending is not None and self.ending.consequence:
            mark_consequences(out, self.ending.consequence)
        if self.ending is not None and self.ending.named is not None:
            for replica in out:  # the cause of a collective's timeout, and its peers
                self.ending.named.settle(replica)
        return out

    # ---- deciding and acting -------------------------------------------------------------------
    def _decide(self, replicas: list[ReplicaStatus], records: Records, stop: bool, hold: bool = True) -> None:
        """The run's ending, once its replicas decide it; `hold`: wait a moment for Slurm's word on
        a failure (False once the job has ended: its state is that word)."""
        if self.ending is not None:
            return
        self.ended_before = set(records.exits) | set(self.kill_seen)
        now = time.time()
        if stop:
            words = Ending(ReplicaState.STOPPED, Reason.STOPPED_BY_USER, "stopped on request")
            self.ending = RunEnding(RunState.STOPPED, Reason.STOPPED_BY_USER, "stopped on request", words, now)
            return
        if self.attempts.under_way():  # what the requeue stops is not a failure of the run
            return
        # a task killed by a signal nobody here sent (Slurm's time limit, someone's scancel): wait for the job's
        # state to say which; a replica that failed by itself: wait a moment for Slurm to say it killed a peer
        waiting = False
        slurm_hit = any(slurm_killed(r) for r in replicas)
        for procid, replica in enumerate(replicas):
            if replica.state != ReplicaState.FAILED or slurm_hit:
                continue
            first = self.failed_since.setdefault(procid, time.time())
            foreign = bool(replica.signal) and replica.reason != Reason.OOM_KILLED
            waiting = waiting or time.time() - first < CAUSE_WAIT_S or (foreign and self._slurm_may_say(first))
        if hold and (waiting or (not slurm_hit and self.hangs.timeouts.holds(replicas))):  # a collective's timeout
            return
        decided = blame(replicas, self.names)
        if decided is None:
            return
        outcome = decided.outcome
        if outcome.state == RunState.FAILED:
            named = None if slurm_hit else self.hangs.timeouts.name(outcome, replicas, self.names)
            outcome = named.outcome if named else outcome
            retried = self.attempts.retry(outcome, replicas, self.job.restarts if self.job else None)
            if retried is None:  # the job is requeued: the next attempt begins when Slurm restarts it
                return
            outcome = dataclasses.replace(outcome, message=outcome.message + retried)
            because = decided.consequence or f"stopped because {named.because if named else f'{outcome.cause} failed'}"
            others = Ending(ReplicaState.STOPPED, Reason.STOPPED_BY_RUN, because)  # (named: no Slurm kill)
            self.ending = RunEnding(
                outcome.state, outcome.reason, outcome.message, others, now, decided.consequence, named
            )
            return
        running = [r for r in replicas if r.state in (ReplicaState.RUNNING, ReplicaState.PENDING)]
        workers_running = any(r.role not in SERVERS for r in running)
        others = Ending(ReplicaState.SUCCEEDED, Reason.STOPPED_BY_RUN, "still running when the run succeeded; stopped")
        term_at = now + (COMPLETION_GRACE_S if workers_running else 0.0)
        self.ending = RunEnding(outcome.state, outcome.reason, outcome.message, others, term_at)

    def _slurm_may_say(self, since: float) -> bool:
        """Whether Slurm may yet say why a task ended by a signal nobody here sent (seen `since`):
        no queue snapshot taken `FOREIGN_SIGNAL_WAIT_S` later has been read, or the job is ending
        (COMPLETING, or ended: its final state says how, `JobControl.over`), within
        `COMPLETING_WAIT_S`. Deciding by time alone read a cancel on a loaded machine (or with a
        slow epilog) as the replicas' own failure."""
        if time.time() - since >= COMPLETING_WAIT_S:
            return False
        if self.snapshot_at < since + FOREIGN_SIGNAL_WAIT_S:
            return True
        return self.job is None or self.job.state == "COMPLETING" or self.job.state not in ACTIVE

    def _act(self, records: Records) -> None:
        """SIGTERM to the tasks when the ending says so; the job's kill once they have all ended
        (and the job did not end by itself) or the grace is over."""
        if self.ending is None or self.killed_at is not None:
            return
        now = time.time()
        job_state = self.job.state if self.job else None
        killed = self.kill_seen
        ended = [
            records.exits[p].get("finished_at") or 0 if p in records.exits else killed[p]
            for p in records.starts
            if p in records.exits or p in killed
        ]
        all_ended = len(ended) == len(records.starts)
        if self.term_sent_at is None:
            if now < self.ending.term_at and not all_ended:
                return
            self.term_sent_at = now
            if job_state in STARTED and not all_ended:
                log.info("run %s: %s; SIGTERM to its tasks", self.run_id, self.ending.message)
                self.control.signal("TERM")
                return
            if not (job_state in STARTED and records.starts):  # nothing runs (yet): cancel at once
                self.control.signal()
                self.killed_at = now
                return
        settled = all_ended and now - max(ended, default=now) >= JOB_END_WAIT_S
        if settled or now - self.term_sent_at >= self.settings.stop_grace_s:
            if not all_ended:
                waited = now - self.term_sent_at
                log.info("run %s: tasks still running %.0f s after SIGTERM; cancelling the job", self.run_id, waited)
            self.control.signal()
            self.killed_at = now

    def _finish(self, final_state: str | None) -> int:
        """Write the run's final status. `final_state`: the job's state once it has left Slurm's
        active states; None when every task has recorded its end and the ending is decided (the
        job is then ending by itself: `JobControl.see_out` makes sure of it)."""
        deadline = time.monotonic() + RECORDS_WAIT_S
        self.control.keep_output()
        while True:
            if self.handle.shared_run_dir:
                mirror.sync(self.work, self.run_dir)
            records = self._records()
            ended = set(records.exits) | set(self._kills(records))
            if all(p in ended for p in records.starts) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        slurm_state = final_state if self.ending is None else None
        cancelled = base_state(slurm_state) == "CANCELLED"
        who = self.control.cancelled_by() if cancelled else None
        time_limit = self.job.time_limit_min if self.job else None
        slurm = slurm_end(self.handle.ref, slurm_state, time_limit, who) if slurm_state else None
        replicas = self._replicas(records, final=True, slurm_state=slurm_state)
        status = self._base_status()
        decided = blame(replicas, self.names) if self.ending is None else None
        decided = None if slurm is not None and not explained_by_its_node(decided, slurm.reason) else decided
        if self.ending is not None:
            state, reason, message = self.ending.state, self.ending.reason, self.ending.message
        elif slurm is not None and decided is None:
            state, reason, message = slurm.state, slurm.reason, slurm.message + self.attempts.ran_out_note()
        else:
            outcome = decided.outcome if decided is not None else None
            if decided is not None and decided.consequence:
                mark_consequences(replicas, decided.consequence)
            if outcome is not None:
                state, reason, message = outcome.state, outcome.reason, outcome.message
            if outcome is None or not records.starts:
                tail = read_tail(self.work / BATCH_OUTPUT, 300).strip().splitlines()
                said = f"; slurm/batch.out ends: {tail[-1]}" if tail else ""
                state, reason = RunState.FAILED, "JobEnded"
                when = "before any task started" if not records.starts else "before its replicas decided the run"
                message = f"Slurm job {self.handle.ref} ended {final_state or '(no longer known)'} {when}{said}"
        status.state, status.reason, status.message = state, reason, message
        status.replicas = replicas
        if final_state is None:  # finished means Slurm holds nothing of it (as a local run's processes)
            self.control.see_out()
        status.finished_at = time.time()
        status.owner = None
        self.store.write_status(status)
        log.info("run %s finished: %s (%s)", self.run_id, state.value, message)
        return 0

    # ---- status -----------------------------------------------------------------------------
    def _base_status(self) -> RunStatus:
        """A status of this run with its owner (this follower, as its starter recorded it)."""
        status = RunStatus(run_id=self.run_id, owner=self.owner, started_at=self.started_at)
        if self.job is not None and self.job.start_time and status.started_at is None:
            # on a kept allocation, the run starts when it is claimed (the job may have run long)
            kept = self.control.kept is not None
            start = max(self.job.start_time, self.handle.submitted_at) if kept else self.job.start_time
            status.started_at = self.started_at = start
        self.attempts.stamp(status, self.job.start_time if self.job and self.job.state == "RUNNING" else None)
        return status

    def _status(self, replicas: list[ReplicaStatus]) -> RunStatus:
        status = self._base_status()
        status.replicas = replicas
        job = self.job
        if job is None or job.state == "PENDING":
            status.state = RunState.PENDING
            if job is not None:
                status.reason = job.reason or None
                status.message = pending_message(
                    self.handle.ref, job.reason, job.partition, job.position, job.pending_in_partition
                )
            else:
                status.message = f"Slurm job {self.handle.ref} submitted"
        else:
            status.state = RunState.RUNNING
            status.message = running_message(
                self.handle.ref, job.nodes, job.time_limit_min, job.start_time, time.time()
            )
        if self.ending is not None and status.state == RunState.RUNNING:
            status.message = f"stopping: {self.ending.message}"
        elif self.attempts.restarts:
            status.message = self.attempts.headline() + (status.message or "")
        return status

    # ---- the loop -----------------------------------------------------------------------------
    def run(self) -> int:
        """Look every `TICK_S`: at the task records (files in the run directory) each time, at the
        queue snapshot as often as it is refreshed (`poll_interval_s`, one squeue for all runs)."""
        last: Any = None
        tasks = len(self.handle.tasks)
        while True:
            if not self.paths.record.exists():
                log.warning("run %s: its directory is gone; the follower ends", self.run_id)
                return 0
            stop = (self.run_dir / STOP_FILE).exists()
            snapshot = self.queue.read()
            if snapshot.error:
                self.lost_since = self.lost_since or time.monotonic()
                if time.monotonic() - self.lost_since >= self.settings.follower_give_up_s:
                    return self._give_up(snapshot.error)
            else:
                self.lost_since = None
                self.job, self.snapshot_at = snapshot.job(self.handle.ref), snapshot.taken_at
                self.component_ids = snapshot.component_ids(self.handle.ref) or self.component_ids
                if self.job is not None and self.job.restarts > self.attempts.restarts:
                    self._next_attempt(self.job.restarts)
            if self.handle.shared_run_dir:
                mirror.sync(self.work, self.run_dir)
            records = self._records()
            replicas = self._replicas(records, final=False, slurm_state=None)
            self._decide(replicas, records, stop)
            try:
                self._act(records)
            except SlurmUnreachable as error:
                log.warning("run %s: %s", self.run_id, error)
            if self.ending is not None and records.all_ended(tasks, self.kill_seen):
                return self._finish(None)
            if not snapshot.error and snapshot.taken_at != self.last_snapshot:
                self.last_snapshot = snapshot.taken_at
                final = self.control.over(self.job, snapshot)
                if final is not None and self.ending is None and base_state(final) == "FAILED":
                    # its tasks ended it before the hold for Slurm's word was over: decide now, and a
                    # run with retries left is requeued (scontrol requeue takes a finished batch job)
                    self._decide(replicas, records, stop, hold=False)
                    if self.ending is None and self.attempts.under_way():
                        continue
                if final is not None:
                    return self._finish(final)
            status = self._status(self._replicas(records, final=False, slurm_state=None))
            self.hangs.mark_stalls(status.replicas, running=self.ending is None)
            replicas_key = [(r.state, r.reason, r.exit_code, r.stalled_since) for r in status.replicas]
            key = (status.state, status.reason, status.message, replicas_key)
            if key != last:
                self.store.write_status(status)
                last = key
            time.sleep(TICK_S)

    def _next_attempt(self, restarts: int) -> None:
        """Slurm restarted the job (`requeues.py`): the next attempt read from its own records and
        the batch output's new lines; beyond the run's retries, the job is cancelled (`_act`)."""
        offset = os.stat(self.work / BATCH_OUTPUT).st_size if (self.work / BATCH_OUTPUT).exists() else 0
        if not self.attempts.begin(restarts, self._replicas(self._records(), final=False, slurm_state=None)):
            reason, message = self.attempts.ran_out()
            words = Ending(ReplicaState.STOPPED, Reason.STOPPED_BY_RUN, message)
            self.ending = RunEnding(RunState.FAILED, reason, message, words, time.time())
        self.reader = RecordReader(self.attempts.folder(), self.work / BATCH_OUTPUT, offset=offset)
        self.kill_seen, self.failed_since, self.ended_before = {}, {}, set()

    def _give_up(self, error: str) -> int:
        status = self.store.status(self.run_id)
        status.reason = Reason.LOST_CONTACT
        status.message = (
            f"the Slurm commands have not answered for {self.settings.follower_give_up_s:g} s ({error}); "
            "the job may still run. A keeper (the Jupyter server's, Run.wait(), jupyter px follow) follows it again"
        )
        status.owner = None
        self.store.write_status(status)
        log.warning("run %s: %s", self.run_id, status.message)
        return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m jupyter_px.backends.slurm.follower RUN_DIR`: follow one run (`follower_process`)."""
    return follower_process.main(argv, FOLLOWER, follow=_follow)


def _follow(store: RunStore, run_id: str) -> int:
    return Follower(store, run_id).run()


if __name__ == "__main__":
    follower_process.run_main(main)
