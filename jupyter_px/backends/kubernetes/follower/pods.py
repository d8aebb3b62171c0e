"""What the follower reads of pods and jobs, pure functions: a slim copy of a pod to keep, the
replicas whose logs people read first, whether a pod's end was its deletion's, and whether a
job leaves its running pods to the follower."""

from __future__ import annotations

from typing import Any

from ....runstore import ReplicaState, ReplicaStatus
from ..shared.replica_pods import COMPLETION_INDEX_LABEL
from .log_sink import parse_stamp

#: Exit codes of a container killed by its pod's deletion (SIGTERM, then SIGKILL after the grace).
DELETION_EXIT_CODES = (143, 137)


def slim(pod: dict[str, Any]) -> dict[str, Any]:
    """What the follower reads of a pod: a pod's spec carries its whole environment (tens of KB in
    a big run), which 1,000 pods held in memory would make hundreds of MB. Of the annotations only
    the Job's completion index (a Trainer node's rank where Kubernetes < 1.28 has no label)."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    keep = ("name", "uid", "labels", "deletionTimestamp", "deletionGracePeriodSeconds")
    slim_meta = {k: meta[k] for k in keep if k in meta}
    if COMPLETION_INDEX_LABEL in (meta.get("annotations") or {}):
        slim_meta["annotations"] = {COMPLETION_INDEX_LABEL: meta["annotations"][COMPLETION_INDEX_LABEL]}
    return {
        "kind": "Pod",  # list items carry no kind; deleting one needs it
        "apiVersion": "v1",
        "metadata": slim_meta,
        "spec": {
            "containers": [{"name": c.get("name")} for c in spec.get("containers") or []],
            **{k: spec[k] for k in ("restartPolicy", "nodeName") if k in spec},
        },
        "status": pod.get("status") or {},
    }


def leaders(topology: Any) -> set[tuple[str, int]]:
    """The replicas whose logs people read first: the master (chief, launcher), else worker 0."""
    keys = [(s.role, s.index) for s in topology.replicas()]
    masters = [k for k in keys if k[0] in ("master", "chief")]
    return set(masters or [k for k in keys if k == ("worker", 0)] or keys[:1])


def ended_by_deletion(pod: dict[str, Any], replica: ReplicaStatus) -> bool:
    """Was this pod deleted before its replica ended by itself? Its deletion is requested (a
    `deletionTimestamp`, which is the request's time plus the grace period) and the replica
    still runs, or ended killed (143/137) after the request: the kubelet's 143 of a deleted pod
    (pkg/kubelet/kuberuntime/kuberuntime_container.go killContainer) is no failure of the code."""
    meta = pod.get("metadata") or {}
    deadline = parse_stamp(meta.get("deletionTimestamp") or "")
    if deadline is None or replica.state == ReplicaState.SUCCEEDED:
        return False
    if replica.state != ReplicaState.FAILED:
        return True
    requested = deadline[0] - int(meta.get("deletionGracePeriodSeconds") or 0)
    return replica.exit_code in DELETION_EXIT_CODES and (replica.finished_at or 0) >= requested - 1


def keeps_running_pods(job_kind: str | None, job: dict[str, Any] | None) -> bool:
    """Does this run's Kubeflow job keep the pods still running when it ends? cleanPodPolicy None
    (upstream's default, and ours: see settings.py) does (a parameter server, MPI workers,
    workers the master did not wait for): the follower deletes them, once it has their logs, so
    nothing runs on and nothing is lost (an operator that deletes them may do so before a
    follower that started late has read a line). A TrainJob's JobSet deletes its active Jobs."""
    if job_kind in (None, "TrainJob"):
        return False
    spec = (job or {}).get("spec") or {}
    policy = (spec.get("runPolicy") or {}).get("cleanPodPolicy") or spec.get("cleanPodPolicy")
    return policy in (None, "None")
