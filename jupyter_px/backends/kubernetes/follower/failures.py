"""What a failed pod's code raised, and who a collective timeout waited for: the Kubernetes
follower's reading of a failure, as the local supervisor and the Slurm follower read theirs.

- A pod's runner cannot write its failure record into the run directory (the read-only
  ConfigMap): it prints it as one `@px-failure` line, which the log sink keeps as the replica's
  record (`runstore/log_metrics.py`). A failed replica's message then says what its code raised
  and where ("exited with code 1: ValueError: boom (cell [5], line 8)": `backends/failures.py`).
- When a run's first failure is a collective that timed out, the replica that failed is one
  that waited; the one at fault never joined. The decision waits until the failed replica's
  log has been read to its end (its record, if it printed one, is then stored), then, if it is
  such a timeout, for the stacks of the pods still running (asked in the pods:
  `shared/stacks.py`), and names the replica the others waited for
  (`backends/collective_blame.py`): it ends Failed (CollectiveTimeout), the others "stopped
  because worker-1 never joined a collective". On plain pods the follower decides the
  run; a Kubeflow job's or a TrainJob's operator decides its own, and the follower only holds
  its reading of that decision for those seconds: the job's pods still run (cleanPodPolicy
  `None`, the operators' default), and the run's message says whose fault the failure was. Where
  the operator has deleted them already (cleanPodPolicy `Running`, a restart budget spent), no
  stack can be read and the first failure stands.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path

from ....runstore import ReplicaState, ReplicaStatus, RunState
from ....runstore.models import Reason
from ....topology.naming import ReplicaNames
from ...collective_blame import CollectiveTimeouts, Named, TakeStacks
from ...failures import code_failure
from ...outcome import Outcome

#: At most how long the decision of a run waits for a failed replica's failure record: until its
#: log has been read to its end, where the record is if there is one. The bound is for a read that
#: never ends; a loaded machine took more than 5 s to bring the records of a collective timeout,
#: and without them its culprit could not be named.
RECORD_WAIT_S = 60.0


def _record_coming(replica: ReplicaStatus) -> bool:
    """Whether a failed replica's failure record may still be on its way: its runner exits 1
    after it prints one (an exception; `sys.exit(3)` or a signal leaves none), and a replica
    the kubelet restarted (`OnFailure`) is not held back, as its next start would count."""
    return (
        replica.state == ReplicaState.FAILED
        and replica.failure is None
        and replica.exit_code == 1
        and not replica.restarts
    )


class Failures:
    """One run's reading of its failures (see the module doc): `explain` each pod's replica,
    `decide` the run's state on each turn, `stopped` each replica the run stops."""

    def __init__(
        self, run_dir: Path, take: TakeStacks, names: ReplicaNames, read_to_end: Callable[[tuple[str, int]], bool]
    ):
        self.run_dir, self.names, self.read_to_end = run_dir, names, read_to_end
        self.timeouts = CollectiveTimeouts(take)
        self.failed_seen: dict[str, float] = {}
        self.named: Named | None = None

    def explain(self, view: ReplicaStatus) -> None:
        """A failed replica's failure record and message, once its log has carried the record."""
        if view.state == ReplicaState.FAILED and view.failure is None:
            failure, message = code_failure(self.run_dir, view.role, view.index, view.started_at, view.message)
            if failure is not None:
                view.failure, view.message = failure, message

    def decide(
        self, state: RunState, reason: str | None, message: str | None, replicas: Iterable[ReplicaStatus]
    ) -> tuple[RunState, str | None, str | None]:
        """The run's state as the follower should write it: Running while a failed run's cause
        is still being read, the missing replica named once the stacks are in."""
        if state != RunState.FAILED:
            return state, reason, message
        replicas = list(replicas)
        now = time.monotonic()
        waiting = False
        for replica in replicas:
            if not _record_coming(replica):
                continue
            if self.read_to_end((replica.role, replica.index)):
                self.explain(replica)  # its log is stored to its end: its record too, if it printed one
                continue
            first = self.failed_seen.setdefault(replica.key, now)
            waiting = waiting or now - first < RECORD_WAIT_S
        if waiting or self.timeouts.holds(replicas):
            return RunState.RUNNING, None, None
        outcome = Outcome(state, reason or Reason.REPLICA_FAILED, message or "")
        self.named = self.timeouts.name(outcome, replicas, self.names)
        if self.named is None:
            return state, reason, message
        return self.named.outcome.state, self.named.outcome.reason, self.named.outcome.message

    def told(self, replica: ReplicaStatus, final: bool, by_user: bool) -> None:
        """What a replica reads in the status written now: one the run's end stops (`stopped`),
        or, once a collective's timeout is named, the cause and its peers (`Named.settle`)."""
        if final and replica.state in (ReplicaState.PENDING, ReplicaState.RUNNING, ReplicaState.RESTARTING):
            self.stopped(replica, by_user)
        elif self.named is not None:
            self.named.settle(replica)

    def stopped(self, replica: ReplicaStatus, by_user: bool) -> None:
        """A replica this run stopped (a stop, or the rest of a run that ended): Stopped, saying
        why; the replica a collective timeout waited for, Failed (CollectiveTimeout)."""
        replica.state = ReplicaState.STOPPED
        replica.reason = Reason.STOPPED_BY_USER if by_user else Reason.STOPPED_BY_RUN
        replica.message = "stopped on request" if by_user else "ended with the run"
        if self.named is not None and not by_user:
            if replica.key in self.named.missing:
                replica.state, replica.reason = ReplicaState.FAILED, Reason.COLLECTIVE_TIMEOUT
                replica.message = self.named.missing[replica.key]
            else:
                replica.message = f"stopped because {self.named.because}"
        replica.finished_at = replica.finished_at or time.time()
