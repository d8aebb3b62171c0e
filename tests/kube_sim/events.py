"""Events as the controllers' event recorders write them (v1 Events; the simulated server
serves events.k8s.io/v1 as a separate resource, not as a view of these).
staging/src/k8s.io/client-go/tools/record/event.go: the name is `<object>.<nanoseconds in hex>`,
involvedObject the object's reference, source the component and host, count 1 with first and
last timestamps."""

from __future__ import annotations

import time
from typing import Any

from .apiserver import ApiServer, now
from .errors import ApiError


def record(
    api: ApiServer,
    obj: dict[str, Any],
    reason: str,
    message: str,
    kind: str = "Normal",
    component: str = "",
    host: str = "",
) -> None:
    meta = obj["metadata"]
    namespace = meta.get("namespace") or "default"
    event = {
        "metadata": {"name": f"{meta['name']}.{time.time_ns():x}", "namespace": namespace},
        "involvedObject": {
            "kind": obj.get("kind", ""),
            "namespace": meta.get("namespace", ""),
            "name": meta["name"],
            "uid": meta.get("uid", ""),
            "apiVersion": obj.get("apiVersion", ""),
            "resourceVersion": meta.get("resourceVersion", ""),
        },
        "reason": reason,
        "message": message,
        "type": kind,
        "source": {"component": component, **({"host": host} if host else {})},
        "firstTimestamp": now(),
        "lastTimestamp": now(),
        "count": 1,
        "reportingComponent": component,
        "reportingInstance": host or component,
    }
    try:
        api.create(api.resource("", "v1", "events"), event, namespace)
    except ApiError:  # a recorder drops what it cannot write (a namespace being deleted)
        pass


def reasons(api: ApiServer, namespace: str, name: str | None = None) -> list[str]:
    """The reasons of the events about `name` (or all) in `namespace`, oldest first."""
    items = api.list(api.resource("", "v1", "events"), namespace)["items"]
    items.sort(key=lambda e: int(e["metadata"]["resourceVersion"]))
    return [e["reason"] for e in items if name is None or e["involvedObject"]["name"] == name]
