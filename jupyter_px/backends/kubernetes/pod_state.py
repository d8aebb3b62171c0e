"""What a pod's status means for a replica, and what the replicas (or a job) mean for the run.

Pure functions over the API's JSON, so every state is testable without a cluster:
Pending (Unschedulable with the scheduler's message, ContainerCreating, ImagePullBackOff, ...),
Running, Restarting (CrashLoopBackOff), Succeeded, Failed (OOMKilled, Error, with the exit code).
"""

from __future__ import annotations

import calendar
import time
from dataclasses import dataclass
from typing import Any

from ...runstore import ReplicaState, RunState

#: Waiting reasons that will not fix themselves: shown as the replica's reason while Pending.
STUCK_REASONS = {"ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CreateContainerConfigError"}


@dataclass(frozen=True)
class PodView:
    state: ReplicaState
    reason: str | None = None
    message: str | None = None
    exit_code: int | None = None
    restarts: int = 0
    started_at: float | None = None
    finished_at: float | None = None
    container_started: bool = False  # a container exists whose log can be read


def _time(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return float(calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        return None


def pod_view(pod: dict[str, Any]) -> PodView:
    status = pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    containers = status.get("containerStatuses") or []
    main = containers[0] if containers else {}
    state = main.get("state") or {}
    restarts = int(main.get("restartCount") or 0)
    started = bool(state.get("running") or state.get("terminated") or main.get("lastState", {}).get("terminated"))
    started_at = _time((state.get("running") or state.get("terminated") or {}).get("startedAt"))
    if phase in ("Succeeded", "Failed"):
        term = state.get("terminated") or {}
        code = term.get("exitCode")
        reason = term.get("reason") or status.get("reason") or ("Completed" if phase == "Succeeded" else "Error")
        return PodView(
            ReplicaState.SUCCEEDED if phase == "Succeeded" else ReplicaState.FAILED,
            reason,
            term.get("message") or status.get("message"),
            code if code is not None else (0 if phase == "Succeeded" else None),
            restarts,
            started_at,
            _time(term.get("finishedAt")) or time.time(),
            started,
        )
    waiting = state.get("waiting") or {}
    if phase == "Running":
        if waiting.get("reason") == "CrashLoopBackOff" or (waiting and restarts):
            last = (main.get("lastState") or {}).get("terminated") or {}
            message = waiting.get("message") or (
                f"exit code {last.get('exitCode')} ({last.get('reason')})" if last else None
            )
            return PodView(
                ReplicaState.RESTARTING,
                waiting.get("reason"),
                message,
                last.get("exitCode"),
                restarts,
                started_at,
                None,
                started,
            )
        return PodView(ReplicaState.RUNNING, None, None, None, restarts, started_at, None, started)
    # Pending: not scheduled yet, or containers being created / images pulled
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return PodView(ReplicaState.PENDING, condition.get("reason") or "Unschedulable", condition.get("message"))
    if waiting:
        return PodView(
            ReplicaState.PENDING, waiting.get("reason"), waiting.get("message"), None, restarts, None, None, started
        )
    return PodView(ReplicaState.PENDING, status.get("reason"), status.get("message"), None, restarts)


def job_outcome(job: dict[str, Any] | None) -> tuple[RunState, str | None, str | None] | None:
    """A Kubeflow job's or TrainJob's terminal condition (Succeeded/Complete, Failed), if any."""
    for condition in (job or {}).get("status", {}).get("conditions") or []:
        if condition.get("status") != "True":
            continue
        kind = condition.get("type")
        if kind in ("Succeeded", "Complete"):
            return RunState.SUCCEEDED, condition.get("reason"), condition.get("message")
        if kind == "Failed":
            return RunState.FAILED, condition.get("reason"), condition.get("message")
    return None


def replicas_outcome(states: dict[tuple[str, int], PodView], roles: dict[str, int]) -> tuple[RunState, str | None]:
    """The run's state from its replicas (native pods): a failed replica fails the run; the
    master's success (else every worker's) is the run's success, as Kubeflow's success policy."""
    for (role, index), view in states.items():
        if view.state == ReplicaState.FAILED:
            return RunState.FAILED, f"{role}-{index} failed: {view.reason or 'Error'}" + (
                f" (exit code {view.exit_code})" if view.exit_code is not None else ""
            )
    deciding = [("master", 0)] if roles.get("master") else [("worker", i) for i in range(roles.get("worker", 0))]
    if deciding and all(key in states and states[key].state == ReplicaState.SUCCEEDED for key in deciding):
        return RunState.SUCCEEDED, None
    if any(v.state in (ReplicaState.RUNNING, ReplicaState.RESTARTING, ReplicaState.SUCCEEDED) for v in states.values()):
        return RunState.RUNNING, None
    return RunState.PENDING, None
