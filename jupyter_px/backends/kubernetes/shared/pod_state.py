"""What a pod's status means for a replica, and what a job's conditions mean for the run.

Pure functions over the API's JSON, so every state is testable without a cluster:
Pending (Unschedulable with the scheduler's message, ContainerCreating, ImagePullBackOff, ...),
Running, Restarting (CrashLoopBackOff), Succeeded, Failed (OOMKilled, Error, with the exit code;
Evicted; NodeLost).

The replica is its main container, found by name: the kubelet sorts `containerStatuses` by name
(pkg/kubelet/kubelet_pods.go convertToAPIContainerStatuses), so an injected `istio-proxy`
sidecar comes before our container and `containerStatuses[0]` is the sidecar's. And once the main
container has ended for good (exited under `restartPolicy: Never`, or exited 0 under
`OnFailure`), the replica has ended, whatever a non-native sidecar (an ordinary container that
never exits) does to the pod's phase.
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Sequence
from typing import Any

from ....runstore import ReplicaState, ReplicaStatus, RunState
from ....runstore.models import Reason
from ...outcome import Outcome

#: Waiting reasons that will not fix themselves: shown as the replica's reason while Pending.
STUCK_REASONS = {"ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CreateContainerConfigError"}
#: The names rendering gives the replica's container: native pods (`replica`), the Kubeflow
#: operators' required names, Trainer v2's runtime (`node`) and the MPI launcher.
MAIN_CONTAINERS = ("replica", "pytorch", "tensorflow", "mxnet", "mpi", "xgboost", "paddle", "node", "launcher")
#: A replica whose node stopped answering (its pod can never finish on its own).
NODE_LOST = "NodeLost"


def parse_time(text: str | None) -> float | None:
    """An RFC 3339 time of the API (`2026-01-02T03:04:05Z`) in seconds since the epoch."""
    if not text:
        return None
    try:
        return float(calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        return None


def container_started(pod: dict[str, Any]) -> bool:
    """Does a container of this pod exist (running, or ended) whose log can be read?"""
    main = _main_container(pod)
    state = main.get("state") or {}
    return bool(state.get("running") or state.get("terminated") or (main.get("lastState") or {}).get("terminated"))


def main_container_name(pod: dict[str, Any]) -> str | None:
    """The replica's container in the pod's spec: the first of our names, else the first one."""
    names = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
    return next((n for n in names if n in MAIN_CONTAINERS), names[0] if names else None)


def _main_container(pod: dict[str, Any]) -> dict[str, Any]:
    containers = (pod.get("status") or {}).get("containerStatuses") or []
    name = main_container_name(pod)
    found = next((c for c in containers if c.get("name") == name), None)
    if found is None and name is None and containers:
        return containers[0]
    return found or {}


def main_ended(pod: dict[str, Any]) -> bool:
    """Has the main container ended for good (the kubelet will not start it again)?"""
    term = (_main_container(pod).get("state") or {}).get("terminated")
    if not term:
        return False
    policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
    return policy == "Never" or (policy == "OnFailure" and term.get("exitCode") == 0)


def node_lost(pod: dict[str, Any]) -> bool:
    """The kubelet stopped answering: the node lifecycle controller marked the pod not Ready
    (pkg/controller/util/node/controller_utils.go MarkPodsNotReady) while the last status the
    kubelet wrote still says its container runs and is ready: nobody will ever report its end."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    main = _main_container(pod)
    if not (main.get("state") or {}).get("running") or not main.get("ready"):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "False" for c in status.get("conditions") or [])


def pod_replica(pod: dict[str, Any], role: str, index: int) -> ReplicaStatus:
    """The replica `role-index` as its pod's status shows it, in the run store's terms."""
    status = pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    main = _main_container(pod)
    state = main.get("state") or {}
    restarts = int(main.get("restartCount") or 0)
    started_at = parse_time((state.get("running") or state.get("terminated") or {}).get("startedAt"))
    replica = ReplicaStatus(role=role, index=index, restarts=restarts, started_at=started_at)
    if phase == "Running" and main_ended(pod):  # a sidecar keeps the pod Running: the replica ended
        phase = "Succeeded" if (state.get("terminated") or {}).get("exitCode") == 0 else "Failed"
    if phase in ("Succeeded", "Failed"):
        term = state.get("terminated") or {}
        code = term.get("exitCode")
        replica.state = ReplicaState.SUCCEEDED if phase == "Succeeded" else ReplicaState.FAILED
        # the pod's own reason (Evicted, DeadlineExceeded) says more than the kill's exit code
        replica.reason = (
            status.get("reason") or term.get("reason") or (Reason.COMPLETED if phase == "Succeeded" else Reason.ERROR)
        )
        replica.exit_code = code if code is not None else (0 if phase == "Succeeded" else None)
        replica.message = (status.get("message") or "").strip() or term.get("message") or _exited(replica.exit_code)
        replica.finished_at = parse_time(term.get("finishedAt")) or time.time()
        return replica
    if node_lost(pod):
        replica.state, replica.reason = ReplicaState.FAILED, NODE_LOST
        node = (pod.get("spec") or {}).get("nodeName") or "its node"
        replica.message = f"{node} stopped answering (the kubelet no longer reports this pod); it cannot finish"
        replica.finished_at = time.time()
        return replica
    waiting = state.get("waiting") or {}
    if phase == "Running":
        _, failure = failed_starts(pod)  # it failed, and the kubelet has not started it again yet
        if waiting.get("reason") == "CrashLoopBackOff" or (waiting and restarts) or failure is not None:
            last = failure or (main.get("lastState") or {}).get("terminated") or {}
            replica.state, replica.reason = ReplicaState.RESTARTING, waiting.get("reason") or last.get("reason")
            replica.exit_code = last.get("exitCode")
            replica.message = waiting.get("message") or (
                f"exit code {last.get('exitCode')} ({last.get('reason')})" if last else None
            )
        else:
            replica.state = ReplicaState.RUNNING
        return replica
    # Pending: not scheduled yet, or containers being created / images pulled
    replica.started_at = None
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            replica.reason, replica.message = condition.get("reason") or Reason.UNSCHEDULABLE, condition.get("message")
            return replica
    source = waiting or status
    replica.reason, replica.message = source.get("reason"), source.get("message")
    return replica


def failed_starts(pod: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    """How many times the replica's container has failed (exited non-zero), and the latest
    failure's `terminated` record (None when the latest instance has not failed).

    `restartCount` is the latest container instance's number (kubernetes v1.33.0
    pkg/kubelet/kubelet_pods.go convertToAPIContainerStatuses: the status of the newest instance,
    whose restart count is the instances before it); while that instance has ended, it is either
    `state.terminated` or, waiting for its restart (CrashLoopBackOff), `lastState.terminated`.
    Under `OnFailure` every restart follows a failure, so failures = restarts made, plus one when
    the latest instance failed too."""
    main = _main_container(pod)
    state = main.get("state") or {}
    latest = state.get("terminated") or (
        (main.get("lastState") or {}).get("terminated") if state.get("waiting") else None
    )
    restarts = int(main.get("restartCount") or 0)
    if latest and latest.get("exitCode") not in (0, None):
        return restarts + 1, latest
    return restarts, None


def failure_restarted_after(pod: dict[str, Any]) -> dict[str, Any] | None:
    """The `terminated` record of the failure the replica's running container was restarted
    after (its `lastState`), or None."""
    main = _main_container(pod)
    if not (main.get("state") or {}).get("running"):
        return None
    last = (main.get("lastState") or {}).get("terminated") or {}
    return last if last.get("exitCode") not in (0, None) else None


def restarts_exhausted(pod: dict[str, Any], max_restarts: int) -> tuple[int, dict[str, Any]] | None:
    """Native pods: has the replica failed for the (max_restarts + 1)-th time? Then how many
    times, and the `terminated` record of that failure. The kubelet restarts an `OnFailure` /
    `Always` pod's container without limit, so the follower ends it (`fail_exhausted`)."""
    if (pod.get("spec") or {}).get("restartPolicy") in (None, "Never"):
        return None
    failures, latest = failed_starts(pod)
    if latest is None or failures <= max_restarts:
        return None
    return failures, latest


def fail_exhausted(replica: ReplicaStatus, failures: int, latest: dict[str, Any], max_restarts: int) -> None:
    """The replica failed past its max_restarts: Failed, the count in its message."""
    code = latest.get("exitCode")
    replica.state = ReplicaState.FAILED
    replica.reason = latest.get("reason") or Reason.ERROR
    replica.exit_code = code
    replica.restarts = max(replica.restarts, failures - 1)
    replica.message = f"failed {failures} times (max_restarts {max_restarts}): {_exited(code)}"
    replica.finished_at = parse_time(latest.get("finishedAt")) or time.time()


def _exited(code: int | None) -> str | None:
    return None if code is None else f"exited with code {code}"


def job_outcome(job: dict[str, Any] | None) -> Outcome | None:
    """A Kubeflow job's or TrainJob's terminal condition (Succeeded/Complete, Failed), if any, as
    the same `Outcome` the shared success policy gives: the operator applied the policy, and its
    condition's reason (e.g. `PyTorchJobSucceeded`) is kept as the cluster said it."""
    for condition in (job or {}).get("status", {}).get("conditions") or []:
        if condition.get("status") != "True":
            continue
        kind, message = condition.get("type"), condition.get("message") or ""
        if kind in ("Succeeded", "Complete"):
            return Outcome(RunState.SUCCEEDED, condition.get("reason") or Reason.COMPLETED, message)
        if kind == "Failed":
            return Outcome(RunState.FAILED, condition.get("reason") or Reason.REPLICA_FAILED, message)
    return None


def pods_state(replicas: Sequence[ReplicaStatus]) -> RunState:
    """An undecided run's state from its pods: Running once any replica has started (a job's
    failed pod included: its operator may restart it), else Pending."""
    started = (ReplicaState.RUNNING, ReplicaState.RESTARTING, ReplicaState.SUCCEEDED, ReplicaState.FAILED)
    return RunState.RUNNING if any(r.state in started for r in replicas) else RunState.PENDING
