"""Events as the controllers' event recorders write them (v1 Events; the simulated server
serves events.k8s.io/v1 as a separate resource, not as a view of these).

client-go v1.33.0 tools/record/event.go: the name is `<object>.<nanoseconds in hex>`,
involvedObject the object's reference, source the component and host, count 1 with first and
last timestamps. tools/record/events_cache.go EventCorrelator: an event identical to one the same
recorder wrote before (getEventKey: source, involved object, type, reason, message) is not written
again: that event's `count` goes up and its `lastTimestamp` moves (eventLogger.eventObserve, a
patch of count, lastTimestamp and message), so a container that keeps failing has one BackOff
event whose count grows. Each component's recorder keeps its own cache (here: per API server,
component and host), as each process does.
"""

from __future__ import annotations

import time
import weakref
from typing import Any

from .apiserver import ApiServer, now
from .errors import ApiError

#: (component, host, event key) -> (event name, count, firstTimestamp), per API server
_SEEN: weakref.WeakKeyDictionary[ApiServer, dict[tuple[str, ...], tuple[str, int, str]]] = weakref.WeakKeyDictionary()


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
    involved = {
        "kind": obj.get("kind", ""),
        "namespace": meta.get("namespace", ""),
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "apiVersion": obj.get("apiVersion", ""),
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    # events_cache.go getEventKey (the involved object's resourceVersion is not part of it)
    key = (component, host, involved["kind"], namespace, meta["name"], involved["uid"], involved["apiVersion"],
           kind, reason, message)  # fmt: skip
    events = api.resource("", "v1", "events")
    with api.cond:  # the registry's lock: a recorder may be called while holding it
        seen = _SEEN.setdefault(api, {})
        previous = seen.get(key)
        if previous is not None:
            name, count, first = previous
            try:
                current = api.get(events, namespace, name)
                current.update(count=count + 1, lastTimestamp=now(), message=message)
                api.update(events, current, namespace)
                seen[key] = (name, count + 1, first)
                return
            except ApiError:  # gone (its namespace deleted, or compacted): write it anew
                pass
        stamp = now()
        event = {
            "metadata": {"name": f"{meta['name']}.{time.time_ns():x}", "namespace": namespace},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "type": kind,
            "source": {"component": component, **({"host": host} if host else {})},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "reportingComponent": component,
            "reportingInstance": host or component,
        }
        try:
            api.create(events, event, namespace)
        except ApiError:  # a recorder drops what it cannot write (a namespace being deleted)
            return
        seen[key] = (event["metadata"]["name"], 1, stamp)


def reasons(api: ApiServer, namespace: str, name: str | None = None) -> list[str]:
    """The reasons of the events about `name` (or all) in `namespace`, oldest first."""
    items = api.list(api.resource("", "v1", "events"), namespace)["items"]
    items.sort(key=lambda e: int(e["metadata"]["resourceVersion"]))
    return [e["reason"] for e in items if name is None or e["involvedObject"]["name"] == name]
