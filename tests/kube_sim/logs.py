"""Pod logs: the API server's part (which container, is there a node) before the kubelet's.

kubernetes v1.33.0 pkg/registry/core/pod/strategy.go LogLocation: without `container=` a pod
with one container gets that one, a pod with several is a 400 `a container name must be
specified for pod %s, choose one of: %s`; an unknown name is a 400 `container %s is not valid
for pod %s`; a pod with no node yet has no logs (an empty answer). The kubelet serves the rest
(`kubelet.py`).
"""

from __future__ import annotations

from collections.abc import Iterator

from . import errors
from .apiserver import ApiServer


def container_for(pod: dict, container: str | None) -> str:
    spec = pod.get("spec") or {}
    names = [c["name"] for c in spec.get("containers") or []]
    init = [c["name"] for c in spec.get("initContainers") or []]
    name = pod["metadata"]["name"]
    if not container:
        if len(names) == 1:
            return names[0]
        choices = "[" + " ".join(names) + "]"
        message = f"a container name must be specified for pod {name}, choose one of: {choices}"
        if init:
            message += " or one of the init containers: [" + " ".join(init) + "]"
        raise errors.bad_request(message)
    if container not in names + init:
        raise errors.bad_request(f"container {container} is not valid for pod {name}")
    return container


def log_stream(api: ApiServer, namespace: str, name: str, query: dict[str, str]) -> Iterator[bytes]:
    pod = api.get(api.resource("", "v1", "pods"), namespace, name)
    container = container_for(pod, query.get("container"))
    if not pod["spec"].get("nodeName") or api.log_source is None:
        return iter(())
    return api.log_source(pod, container, query)
