"""What a pod's status means for a replica, and what a job's conditions mean for the run.

Pure functions over the API's JSON, so every state is testable without a cluster:
Pending (Unschedulable with the scheduler's message, ContainerCreating, ImagePullBackOff, ...),
Running, Restarting (CrashLoopBackOff), Succeeded, Failed (OOMKilled, Error, with the exit code).
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Sequence
from typing import Any

from ...runstore import ReplicaState, ReplicaStatus, RunState
from ...runstore.models import Reason
from ..outcome import Outcome

#: Waiting reasons that will not fix themselves: shown as the replica's reason while Pending.
STUCK_REASONS = {"ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CreateContainerConfigError"}


def _time(text: str | None) -> float | None:
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


def _main_container(pod: dict[str, Any]) -> dict[str, Any]:
    containers = (pod.get("status") or {}).get("containerStatuses") or []
    return containers[0] if containers else {}


def pod_replica(pod: dict[str, Any], role: str, index: int) -> ReplicaStatus:
    """The replica `role-index` as its pod's status shows it, in the run store's terms."""
    status = pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    main = _main_container(pod)
    state = main.get("state") or {}
    restarts = int(main.get("restartCount") or 0)
    started_at = _time((state.get("running") or state.get("terminated") or {}).get("startedAt"))
    replica = ReplicaStatus(role=role, index=index, restarts=restarts, started_at=started_at)
    if phase in ("Succeeded", "Failed"):
        term = state.get("terminated") or {}
        code = term.get("exitCode")
        replica.state = ReplicaState.SUCCEEDED if phase == "Succeeded" else ReplicaState.FAILED
        replica.reason = (
            term.get("reason") or status.get("reason") or (Reason.COMPLETED if phase == "Succeeded" else Reason.ERROR)
        )
        replica.exit_code = code if code is not None else (0 if phase == "Succeeded" else None)
        replica.message = term.get("message") or status.get("message") or _exited(replica.exit_code)
        replica.finished_at = _time(term.get("finishedAt")) or time.time()
        return replica
    waiting = state.get("waiting") or {}
    if phase == "Running":
        if waiting.get("reason") == "CrashLoopBackOff" or (waiting and restarts):
            last = (main.get("lastState") or {}).get("terminated") or {}
            replica.state, replica.reason = ReplicaState.RESTARTING, waiting.get("reason")
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
