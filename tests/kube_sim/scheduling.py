"""Binding pods to nodes (the `pods/binding` subresource) and the simulated scheduler."""

from __future__ import annotations

import copy

from . import errors
from .apiserver import ApiServer, now


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
        old = copy.deepcopy(pod)
        pod["spec"]["nodeName"] = node
        conditions = [c for c in pod["status"].get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append(
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now()}
        )
        pod["status"]["conditions"] = conditions
        key = (pods.key, namespace, name)
        api._commit("MODIFIED", key, pod, old)
