"""Pieces every backend's pod template shares: resources, volumes, the container, the pod spec.

Pure functions of the topology, the settings and the payload, so a manifest can be rendered
(and tested) without a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ....diagnostics.stack_signal import DUMPS_DIR_VARIABLE
from ....topology import ReplicaSpec, Resources, Topology
from .names import run_labels
from .payload import APP_DIR, ENTRY, RUN_DIR, STACKS_DIR, WORK_DIR, Payload
from .settings import KubernetesSettings

SHARED_DIR_ENV = "PX_SHARED_RUN_DIR"
#: A replica's settings that one pod template holds for every replica it makes (a Kubeflow replica
#: spec, a Trainer v2 node): where they differ between indices, the job cannot express it.
UNIFORM_FIELDS = ("resources", "image", "env", "node_selector", "restart_policy", "max_restarts")


@dataclass(frozen=True)
class RenderContext:
    """What every render function needs; built once per run."""

    run_id: str  # the run store's id (PX_RUN_ID)
    base: str  # DNS-1035 base of the object names
    namespace: str
    topology: Topology
    settings: KubernetesSettings
    payload: Payload

    def labels(self) -> dict[str, str]:
        return {**self.settings.object_labels(), **run_labels(self.base)}

    def metadata(self, name: str, extra_labels: Mapping[str, str] | None = None) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "name": name,
            "namespace": self.namespace,
            "labels": {**self.labels(), **(extra_labels or {})},
        }
        if self.settings.annotations:
            meta["annotations"] = dict(self.settings.annotations)
        return meta


def cpu_quantity(cores: float) -> str:
    return str(int(cores)) if cores == int(cores) else f"{round(cores * 1000)}m"


def memory_quantity(mib: float) -> str:
    return f"{int(mib)}Mi" if mib == int(mib) else f"{round(mib * 1024)}Ki"


def resource_requirements(resources: Resources, gpu_resource: str) -> dict[str, dict[str, str]]:
    """requests/limits; GPUs (an extended resource) must have requests == limits."""
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    if resources.cpu is not None:
        if resources.cpu.requests is not None:
            requests["cpu"] = cpu_quantity(resources.cpu.requests)
        if resources.cpu.limits is not None:
            limits["cpu"] = cpu_quantity(resources.cpu.limits)
    if resources.memory is not None:
        if resources.memory.requests is not None:
            requests["memory"] = memory_quantity(resources.memory.requests)
        if resources.memory.limits is not None:
            limits["memory"] = memory_quantity(resources.memory.limits)
    gpus = resources.gpus()
    if gpus:
        requests[gpu_resource] = limits[gpu_resource] = str(gpus)
    out = {}
    if requests:
        out["requests"] = requests
    if limits:
        out["limits"] = limits
    return out


def shared_run_dir(ctx: RenderContext) -> str | None:
    """The run's directory on the shared volume (same path as in the notebook), if configured."""
    settings = ctx.settings
    if not (settings.shared_claim and settings.shared_mount_path):
        return None
    return f"{settings.shared_mount_path.rstrip('/')}/runs/{ctx.run_id}"


def volumes(ctx: RenderContext) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"name": "px-app", "configMap": {"name": ctx.base, "items": list(ctx.payload.items)}},
        {"name": "px-work", "emptyDir": {}},
    ]
    if shared_run_dir(ctx):
        out.append({"name": "px-shared", "persistentVolumeClaim": {"claimName": ctx.settings.shared_claim}})
    return out


def volume_mounts(ctx: RenderContext) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"name": "px-app", "mountPath": APP_DIR, "readOnly": True},
        {"name": "px-work", "mountPath": WORK_DIR},
    ]
    if shared_run_dir(ctx):
        out.append({"name": "px-shared", "mountPath": ctx.settings.shared_mount_path})
    return out


def command() -> list[str]:
    return ["python", ENTRY, RUN_DIR]


def env_list(env: Mapping[str, str], ctx: RenderContext) -> list[dict[str, Any]]:
    shared = shared_run_dir(ctx)
    items: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in env.items()]
    items.append({"name": DUMPS_DIR_VARIABLE, "value": STACKS_DIR})
    if shared:
        items.append({"name": SHARED_DIR_ENV, "value": shared})
    return items


def container(
    name: str,
    spec: ReplicaSpec,
    ctx: RenderContext,
    env: list[dict[str, Any]],
    port: int | None,
    cmd: list[str] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "image": ctx.settings.image_for(ctx.topology.framework, spec.image, spec.resources.gpus() > 0),
        "command": cmd if cmd is not None else command(),
        "env": env,
        "volumeMounts": volume_mounts(ctx),
        "workingDir": WORK_DIR,
    }
    if port is not None:
        out["ports"] = [{"name": "px", "containerPort": port}]
    requirements = resource_requirements(spec.resources, ctx.settings.gpu_resource)
    if requirements:
        out["resources"] = requirements
    return out


def pod_spec(ctx: RenderContext, spec: ReplicaSpec, containers: list[dict[str, Any]]) -> dict[str, Any]:
    """The parts of a PodSpec that come from the settings and the replica (no restart policy)."""
    settings = ctx.settings
    out: dict[str, Any] = {"containers": containers, "volumes": volumes(ctx)}
    node_selector = {**settings.node_selector, **spec.node_selector}
    if node_selector:
        out["nodeSelector"] = node_selector
    if settings.tolerations:
        out["tolerations"] = [dict(t) for t in settings.tolerations]
    if settings.image_pull_secrets:
        out["imagePullSecrets"] = [{"name": s} for s in settings.image_pull_secrets]
    if settings.service_account:
        out["serviceAccountName"] = settings.service_account
    return out


def configmap(ctx: RenderContext) -> dict[str, Any]:
    """The run's ConfigMap: created first, the owner of every other object of the run."""
    out: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": ctx.metadata(ctx.base)}
    if ctx.payload.data:
        out["data"] = dict(ctx.payload.data)
    if ctx.payload.binary_data:
        out["binaryData"] = dict(ctx.payload.binary_data)
    return out
