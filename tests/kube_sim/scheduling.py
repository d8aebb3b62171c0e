"""Binding pods to nodes (the `pods/binding` subresource) and the simulated scheduler."""

from __future__ import annotations

from decimal import Decimal

from . import errors, quantity
from .apiserver import ApiServer, now
from .clone import clone
from .controller import ControllerLoop
from .events import record


def bind(api: ApiServer, namespace: str, name: str, node: str) -> None:
    """pkg/registry/core/pod/storage/storage.go BindingREST.Create (assignPod): set
    spec.nodeName once (409 `pod %v is already assigned to node %q` otherwise) and the
    PodScheduled condition True."""
    pods = api.resource("", "v1", "pods")
    with api.cond:
        pod = api.get(pods, namespace, name)
        if pod["spec"].get("nodeName"):
            raise errors.conflict(
                "pods", "", name, f'pod {name} is already assigned to node "{pod["spec"]["nodeName"]}"'
            )
        if pod["metadata"].get("deletionTimestamp"):
            raise errors.conflict("pods", "", name, f"pod {name} is being deleted, cannot be assigned to a host")
        old = clone(pod)
        pod["spec"]["nodeName"] = node
        conditions = [c for c in pod["status"].get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append(
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now()}
        )
        pod["status"]["conditions"] = conditions
        key = (pods.key, namespace, name)
        api._commit("MODIFIED", key, pod, old)


class Scheduler(ControllerLoop):
    """The default scheduler, as far as node capacity goes (pkg/scheduler/framework/plugins/
    noderesources/fit.go): a pod fits a node when the requests of the pods already on it plus its
    own stay within the node's allocatable cpu, memory, pods and extended resources (nvidia.com/gpu).
    One that fits nowhere gets PodScheduled False `Unschedulable` and a FailedScheduling event
    with the FitError message (pkg/scheduler/framework/types.go FitError.Error):
    `0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No
    preemption victims found for incoming pod.`"""

    name = "scheduler"

    def __init__(self, api: ApiServer):
        super().__init__(api)
        self._reported: dict[str, str] = {}

    def reconcile_all(self) -> None:
        self.schedule()

    def schedule(self) -> None:
        pods = self.api.resource("", "v1", "pods")
        nodes = self.api.list(self.api.resource("", "v1", "nodes"))["items"]
        everything = self.api.list(pods)["items"]
        pending = [
            p
            for p in everything
            if not p["spec"].get("nodeName")
            and not p["metadata"].get("deletionTimestamp")
            and p["spec"].get("schedulerName", "default-scheduler") == "default-scheduler"
        ]
        pending.sort(key=lambda p: int(p["metadata"]["resourceVersion"]))
        for pod in pending:
            used = {n["metadata"]["name"]: _used(n["metadata"]["name"], everything) for n in nodes}
            fits, reasons = [], {}
            for node in nodes:
                missing = _missing(node, used[node["metadata"]["name"]], _requests(pod))
                if missing:
                    for item in missing:
                        reasons[item] = reasons.get(item, 0) + 1
                else:
                    fits.append(node)
            if fits:
                node_name = fits[0]["metadata"]["name"]
                with self.api.cond:  # the event before the kubelet hears of the binding
                    try:
                        bind(self.api, pod["metadata"]["namespace"], pod["metadata"]["name"], node_name)
                    except errors.ApiError:
                        continue
                    pod["spec"]["nodeName"] = node_name
                    where = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
                    record(
                        self.api,
                        pod,
                        "Scheduled",
                        f"Successfully assigned {where} to {node_name}",
                        "Normal",
                        "default-scheduler",
                    )
                continue
            total = len(nodes)
            parts = (
                ", ".join(f"{count} {why}" for why, count in sorted(reasons.items())) or f"{total} node(s) not found"
            )
            message = (
                f"0/{total} nodes are available: {parts}. preemption: 0/{total} nodes are available: "
                f"{total} No preemption victims found for incoming pod."
            )
            uid = pod["metadata"]["uid"]
            if self._reported.get(uid) == message:
                continue
            self._reported[uid] = message
            status = clone(pod.get("status") or {})
            conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
            conditions.append(
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": message,
                    "lastProbeTime": None,
                    "lastTransitionTime": now(),
                }
            )
            status["conditions"] = conditions
            try:
                self.api.update(
                    pods,
                    {"metadata": {"name": pod["metadata"]["name"]}, "status": status},
                    pod["metadata"]["namespace"],
                    "status",
                )
            except errors.ApiError:
                continue
            record(self.api, pod, "FailedScheduling", message, "Warning", "default-scheduler")


def _requests(pod: dict) -> dict[str, Decimal]:
    # the effective request: max(sum of app containers, any init container) per resource
    total: dict[str, Decimal] = {"pods": Decimal(1)}
    for container in pod["spec"].get("containers") or []:
        for name, value in ((container.get("resources") or {}).get("requests") or {}).items():
            total[name] = total.get(name, Decimal(0)) + quantity.parse(value)
    for container in pod["spec"].get("initContainers") or []:
        for name, value in ((container.get("resources") or {}).get("requests") or {}).items():
            total[name] = max(total.get(name, Decimal(0)), quantity.parse(value))
    return total


def _used(node: str, pods: list[dict]) -> dict[str, Decimal]:
    used: dict[str, Decimal] = {}
    for pod in pods:
        if pod["spec"].get("nodeName") == node and (pod.get("status") or {}).get("phase") not in (
            "Succeeded",
            "Failed",
        ):
            for name, value in _requests(pod).items():
                used[name] = used.get(name, Decimal(0)) + value
    return used


def _missing(node: dict, used: dict[str, Decimal], wanted: dict[str, Decimal]) -> list[str]:
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    out = []
    for name, value in wanted.items():
        if value == 0:
            continue
        have = quantity.parse(allocatable.get(name, "0"))
        if used.get(name, Decimal(0)) + value > have:
            out.append("Too many pods" if name == "pods" else f"Insufficient {name}")
    return out


def node(name: str = "node-1", cpu: str = "16", memory: str = "64Gi", pods: str = "110", gpus: int = 0) -> dict:
    """A Ready node with this capacity (what a kubelet registers)."""
    capacity = {"cpu": cpu, "memory": memory, "pods": pods, "ephemeral-storage": "100Gi"}
    if gpus:
        capacity["nvidia.com/gpu"] = str(gpus)
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": now(),
                    "lastTransitionTime": now(),
                }
            ],
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": name}],
        },
    }
