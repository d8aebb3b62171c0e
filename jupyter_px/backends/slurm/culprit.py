"""Which replica's end decided a Slurm run: the success policy every backend applies
(`backends/outcome.py`), with what Slurm killed put first.

When Slurm kills a task (its memory, the time limit, its node), the replica's peers fail a moment
later on their own (gloo's "Connection closed by peer", exit code 1), and their exit records may
well be read first: the replica Slurm killed has no record at all when job accounting killed its
whole step, and a cgroup-killed replica's record is written after its metrics are settled. So a
replica Slurm killed is the cause, whatever was read first; the others that failed with it are
its consequences: Stopped, "stopped because worker-0 was OOMKilled" (their exit codes kept).
Among several replicas Slurm killed (a step killed whole on a node), the first to die, then the
first in task order, is named. A replica that failed by itself clearly before (`SLACK_S`) is still
the cause: Slurm's kill then came after the run had already failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...runstore import ReplicaState, ReplicaStatus, RunState
from ...runstore.models import Reason
from ...topology.naming import ReplicaNames
from ..outcome import Outcome, run_outcome
from .kills import NODE_FAIL, PREEMPTED, TIMEOUT

#: The reasons a replica gets when Slurm ended it, and how its peers' messages say it.
SLURM_CAUSES = {
    Reason.OOM_KILLED.value: "was OOMKilled",
    TIMEOUT: "reached the job's time limit",
    NODE_FAIL: "lost its node",
    PREEMPTED: "was preempted",
}


#: How much earlier than Slurm's kill (as its task's record or the batch output's line was read)
#: a replica's own failure must be to be the cause instead: a kill read from the batch output is
#: read up to a poll after it happened, and the peers it takes down fail at once.
SLACK_S = 1.0


@dataclass(frozen=True)
class Blame:
    """The run's outcome and, when Slurm's kill decided it, what its peers read."""

    outcome: Outcome
    consequence: str | None = None  # "stopped because worker-0 was OOMKilled"


def slurm_killed(replica: ReplicaStatus) -> bool:
    return replica.state == ReplicaState.FAILED and replica.reason in SLURM_CAUSES


def blame(replicas: Sequence[ReplicaStatus], names: ReplicaNames) -> Blame | None:
    """The run's outcome (None while undecided), Slurm's kills first (see the module's docstring)."""
    hit = [r for r in replicas if slurm_killed(r)]
    if not hit:
        outcome = run_outcome(replicas, names)
        return Blame(outcome) if outcome is not None else None
    order = {id(r): n for n, r in enumerate(replicas)}
    first = min(hit, key=lambda r: (r.finished_at or float("inf"), order[id(r)]))
    own = [r.finished_at for r in replicas if r.state == ReplicaState.FAILED and not slurm_killed(r) and r.finished_at]
    if own and first.finished_at and min(own) < first.finished_at - SLACK_S:
        outcome = run_outcome(replicas, names)  # a replica failed by itself well before: it is the cause
        return Blame(outcome) if outcome is not None else None
    label = names.label(first.role, first.index)
    reason = str(first.reason)
    message = f"{label} failed ({reason})" + (f": {first.message}" if first.message else "")
    consequence = f"stopped because {label} {SLURM_CAUSES[reason]}"
    return Blame(Outcome(RunState.FAILED, Reason.REPLICA_FAILED, message, cause=label), consequence)


def mark_consequences(replicas: Sequence[ReplicaStatus], consequence: str) -> None:
    """The replicas that failed by themselves beside a Slurm kill (not killed by Slurm): Stopped
    because of it, their exit codes kept."""
    for replica in replicas:
        if replica.state == ReplicaState.FAILED and not slurm_killed(replica):
            replica.state, replica.reason, replica.message = ReplicaState.STOPPED, Reason.STOPPED_BY_RUN, consequence


def explained_by_its_node(decided: Blame | None, slurm_reason: str) -> bool:
    """Whether a job Slurm ended for a node failure is explained by the replica on that node (the
    batch output's "Node failure on" read before the job left the queue, or after): the run then
    names that replica, as when the follower saw the failure while the job ran, not only the job."""
    if decided is None or decided.consequence is None or slurm_reason != NODE_FAIL:
        return False
    return decided.consequence.endswith(SLURM_CAUSES[NODE_FAIL])
