"""How a run ends, decided from its replicas: Kubeflow's success policy, for the backends that
watch replicas themselves (local processes, native Kubernetes pods).

Kubeflow's operators apply the same rule to their jobs (and say so in the job's conditions):
the first replica to fail fails the run; the master's success is the run's success, or every
worker's when there is no master. One function, so that a run means the same on every backend.
Its sentences name replicas as the job does (`names`: a TensorFlow master is `chief`), as every
surface that shows them does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..runstore import ReplicaState, ReplicaStatus, RunState
from ..runstore.models import Reason
from ..topology.naming import ReplicaNames


@dataclass(frozen=True)
class Outcome:
    """How a run ended: its state, a machine-readable reason, a sentence for people, and the
    replica whose failure decided it, as the job calls it (None when no failure did)."""

    state: RunState
    reason: str
    message: str
    cause: str | None = None


def run_outcome(replicas: Sequence[ReplicaStatus], names: ReplicaNames | None = None) -> Outcome | None:
    """The run's outcome from its replicas' states, or None while it is undecided."""
    names = names or ReplicaNames()
    failed = [r for r in replicas if r.state == ReplicaState.FAILED]
    if failed:
        first = min(failed, key=lambda r: r.finished_at or 0)
        cause = names.label(first.role, first.index)
        what = f"{cause} failed ({first.reason or 'Error'})" + (f": {first.message}" if first.message else "")
        return Outcome(RunState.FAILED, Reason.REPLICA_FAILED, what, cause=cause)
    masters = [r for r in replicas if r.role == "master"]
    deciding = masters or [r for r in replicas if r.role == "worker"] or list(replicas)
    if deciding and all(r.state == ReplicaState.SUCCEEDED for r in deciding):
        if len(deciding) == 1:
            what = f"{names.label(deciding[0].role, deciding[0].index)} succeeded"
        else:
            what = f"all {len(deciding)} {names.role(deciding[0].role)}s succeeded"
        return Outcome(RunState.SUCCEEDED, Reason.COMPLETED, what)
    return None
