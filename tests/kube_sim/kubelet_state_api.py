"""What tests may set that a process cannot produce on this machine, as the kubelet's API:
an image the node cannot pull (`refuse_image` / `allow_image`), a container held waiting
(`set_waiting`), node-pressure eviction (`evict`), the node lost (`lose_node`)."""

from __future__ import annotations

import signal
import threading
import time

from .apiserver import now
from .events import record
from .kubelet_parts import KubeletPart


class StateApi(KubeletPart):
    """The kubelet's API for states no process produces here (a Kubelet part)."""

    unpullable: dict[str, str]
    _thread: threading.Thread

    def evict(self, namespace: str, pod: str, resource: str = "memory") -> None:
        """Node-pressure eviction (pkg/kubelet/eviction/eviction_manager.go evictPod, helpers.go):
        the pod's containers are killed, the pod Failed with reason `Evicted` and the message
        `The node was low on resource: <resource>. `, and (v1.26+ pod disruption conditions) a
        `DisruptionTarget` condition, reason `TerminationByKubelet`. The pod object stays."""
        with self._lock:
            run = next((r for r in self.pods.values() if (r.namespace, r.name) == (namespace, pod)), None)
            if run is None:
                raise KeyError(f"{namespace}/{pod} does not run on {self.node}")
            for container in run.containers:
                container.next_start = float("inf")
                self._signal(container, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while any(c.current and c.current.process and c.current.process.poll() is None for c in run.containers):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.02)
            self._reap(run, "Never")
            self._write_status(run)
            run.done = True
            status = self.api.get(self._pods, namespace, pod)["status"]
            message = f"The node was low on resource: {resource}. "
            status.update(phase="Failed", reason="Evicted", message=message)
            status["conditions"] = [c for c in status.get("conditions") or [] if c["type"] != "DisruptionTarget"] + [
                {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
                 "message": f"The node was low on resource: {resource}.", "lastProbeTime": None,
                 "lastTransitionTime": now()}]  # fmt: skip
            self.api.update(self._pods, {"metadata": {"name": pod}, "status": status}, namespace, "status")
        record(self.api, run.pod, "Evicted", message, "Warning", "kubelet", self.node)

    def lose_node(self) -> None:
        """The node goes away: its processes end without a word (the kubelet stops writing), and
        the node lifecycle controller (pkg/controller/nodelifecycle/node_lifecycle_controller.go)
        marks the node's Ready condition Unknown (`NodeStatusUnknown`, `Kubelet stopped posting
        node status.`) and its pods' Ready condition False. The pods stay, phase as last reported;
        a delete leaves them Terminating (no kubelet to finish it)."""
        self._stop.set()
        self._thread.join(timeout=10)
        with self._lock:
            for run in self.pods.values():
                for container in run.containers:
                    self._signal(container, signal.SIGKILL)
        nodes = self.api.resource("", "v1", "nodes")
        node = self.api.get(nodes, "", self.node)
        for condition in node["status"].get("conditions") or []:
            if condition["type"] == "Ready":
                condition.update(
                    status="Unknown",
                    reason="NodeStatusUnknown",
                    message="Kubelet stopped posting node status.",
                    lastTransitionTime=now(),
                )
        self.api.update(nodes, {"metadata": {"name": self.node}, "status": node["status"]}, "", "status")
        for pod in self.api.list(self._pods, "", field_selector=f"spec.nodeName={self.node}")["items"]:
            status = pod["status"]
            for condition in status.get("conditions") or []:
                if condition["type"] == "Ready":
                    condition.update(status="False", lastTransitionTime=now())
            self.api.update(
                self._pods,
                {"metadata": {"name": pod["metadata"]["name"]}, "status": status},
                pod["metadata"]["namespace"],
                "status",
            )

    def refuse_image(self, image: str, error: str = "not found") -> None:
        """The node cannot pull `image` (a registry that does not have it, no credentials):
        containers of it wait in ImagePullBackOff until `allow_image`."""
        self.unpullable[image] = error
        with self.api.cond:
            self.api.cond.notify_all()

    def allow_image(self, image: str) -> None:
        self.unpullable.pop(image, None)
        with self.api.cond:
            self.api.cond.notify_all()

    def set_waiting(self, namespace: str, pod: str, container: str, reason: str, message: str = "") -> None:
        """Hold a container in a waiting state a process cannot produce here (ImagePullBackOff,
        ErrImagePull, CreateContainerConfigError): it is not started while held."""
        with self._lock:
            for run in self.pods.values():
                if (run.namespace, run.name) == (namespace, pod):
                    for c in run.containers:
                        if c.name == container:
                            c.waiting_reason, c.waiting_message, c.held = reason, message, True
        with self.api.cond:
            self.api.cond.notify_all()
