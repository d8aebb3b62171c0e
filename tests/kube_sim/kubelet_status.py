"""The kubelet's status writer: container states (waiting / running / terminated with exit code
and reason, `lastState`, restartCount), the pod's phase (kubernetes v1.33.0
pkg/kubelet/kubelet_pods.go getPhase, sidecars included) and conditions, written through the
status subresource only when they change (pkg/kubelet/status/status_manager.go)."""

from __future__ import annotations

import time
from typing import Any

from .apiserver import now
from .clone import clone
from .errors import ApiError
from .kubelet_parts import KubeletPart
from .kubelet_pods import ContainerRun, PodRun


class StatusWriter(KubeletPart):
    """A pod's status from its container runs (a Kubelet part)."""

    def _container_status(self, run: PodRun, container: ContainerRun, restart_policy: str) -> dict[str, Any]:
        spec = container.spec
        status: dict[str, Any] = {
            "name": container.name,
            "image": spec.get("image", ""),
            "imageID": "",
            "restartCount": container.restart_count,
            "started": False,
            "ready": False,
        }
        instance = container.current
        terminated = lambda i: {  # noqa: E731
            "exitCode": i.exit_code,
            "reason": i.reason,
            "startedAt": _iso(i.started),
            "finishedAt": _iso(i.finished),
            "containerID": i.container_id,
        }
        if instance is None or (container.held and instance.exit_code is not None):
            waiting = {"reason": container.waiting_reason or "ContainerCreating"}
            if container.waiting_message:
                waiting["message"] = container.waiting_message
            status["state"] = {"waiting": waiting}
        elif instance.exit_code is None:
            status["state"] = {"running": {"startedAt": _iso(instance.started)}}
            status["started"] = status["ready"] = True
            status["containerID"] = instance.container_id
        elif self._will_restart(container, restart_policy) and not run.deleting_since:
            waiting = {"reason": container.waiting_reason or "ContainerCreating"}
            if container.waiting_message:
                waiting["message"] = container.waiting_message
            status["state"] = {"waiting": waiting}
            status["lastState"] = {"terminated": terminated(instance)}
        else:
            status["state"] = {"terminated": terminated(instance)}
            status["containerID"] = instance.container_id
        if instance is not None and "lastState" not in status and len(container.instances) > 1:
            status["lastState"] = {"terminated": terminated(container.instances[-2])}
        status.setdefault("lastState", {})
        return status

    def _phase(self, run: PodRun, restart_policy: str) -> str:
        """Sidecars do not decide the phase, but a pod is not terminal while one still runs
        (pkg/kubelet/kubelet_pods.go getPhase with restartable init containers)."""
        apps = [c for c in run.containers if not c.init]
        sidecars = [c for c in run.containers if c.sidecar]
        inits = [c for c in run.containers if c.init and not c.sidecar]
        if any(c.current is None for c in sidecars):
            return "Pending"
        if any(
            c.current and c.current.exit_code not in (None, 0) and not self._will_restart(c, restart_policy)
            for c in inits
        ):
            return "Failed"
        if any(not (c.current and c.current.exit_code == 0) for c in inits):
            return "Pending"
        if any(c.current is None for c in apps) and not run.deleting_since:
            return "Pending"
        if any(c.running for c in apps):
            return "Running"
        if any(self._will_restart(c, restart_policy) for c in apps) and not run.deleting_since:
            return "Running"
        if any(c.running for c in sidecars):
            return "Running"
        if all(c.current and c.current.exit_code == 0 for c in apps):
            return "Succeeded"
        return "Failed"

    def _write_status(self, run: PodRun) -> None:
        restart_policy = run.pod["spec"].get("restartPolicy", "Always")
        statuses = [self._container_status(run, c, restart_policy) for c in run.containers]
        phase = self._phase(run, restart_policy)
        apps = [s for s, c in zip(statuses, run.containers, strict=True) if not c.init]
        ready = all(s["ready"] for s in apps) and phase == "Running"
        old = run.pod.get("status") or {}
        conditions = {c["type"]: c for c in old.get("conditions") or []}

        def condition(kind: str, value: bool, reason: str = "") -> None:
            before = conditions.get(kind)
            text = "True" if value else "False"
            if before and before.get("status") == text:
                return
            new = {"type": kind, "status": text, "lastProbeTime": None, "lastTransitionTime": now()}
            if reason:
                new["reason"] = reason
            conditions[kind] = new

        initialized = all(c.current and c.current.exit_code == 0 for c in run.containers if c.init)
        condition("PodReadyToStartContainers", run.mounted)
        condition("Initialized", initialized, "" if initialized else "ContainersNotInitialized")
        condition(
            "Ready",
            ready,
            "" if ready else ("PodCompleted" if phase in ("Succeeded", "Failed") else "ContainersNotReady"),
        )
        condition(
            "ContainersReady",
            ready,
            "" if ready else ("PodCompleted" if phase in ("Succeeded", "Failed") else "ContainersNotReady"),
        )
        status = {
            **old,
            "phase": phase,
            "conditions": [
                conditions[k]
                for k in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
                if k in conditions
            ],
            "hostIP": "127.0.0.1",
            "hostIPs": [{"ip": "127.0.0.1"}],
            "podIP": run.ip,
            "podIPs": [{"ip": run.ip}],
            "startTime": run.start_time,
            "containerStatuses": [s for s, c in zip(statuses, run.containers, strict=True) if not c.init],
        }
        if any(c.init for c in run.containers):
            status["initContainerStatuses"] = [s for s, c in zip(statuses, run.containers, strict=True) if c.init]
        comparable = clone(status)
        if comparable == run.last_status:
            return
        try:
            self.api.update(self._pods, {"metadata": {"name": run.name}, "status": status}, run.namespace, "status")
            run.last_status = comparable
        except ApiError as error:
            if error.code != 404:
                raise


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
