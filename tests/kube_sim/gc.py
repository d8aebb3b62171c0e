"""The garbage collector and the namespace controller: asynchronous controllers, as in
kube-controller-manager, never part of a DELETE call.

Garbage collector, after kubernetes v1.33.0 pkg/controller/garbagecollector/garbagecollector.go
(attemptToDeleteItem, processDeletingDependentsItem, orphanDependents):
- an object whose owners are all gone (by uid: an owner recreated under the same name is another
  owner) or all being deleted in the foreground is deleted: Foreground when an owner waits for
  it and it has dependents of its own, else by its own finalizers' policy (orphan, foreground),
  else Background;
- an object with a live owner among gone or waiting ones loses the dangling references (a patch);
- an owner with the `foregroundDeletion` finalizer keeps it until no dependent with
  `blockOwnerDeletion: true` is left, then the finalizer goes (and the owner with it);
- an owner with the `orphan` finalizer has its references removed from its dependents, then the
  finalizer goes.
Namespace controller, after pkg/controller/namespace/deletion/namespaced_resources_deleter.go: a
namespace being deleted is emptied, then removed.
"""

from __future__ import annotations

from typing import Any

from .apiserver import ApiServer
from .controller import ControllerLoop
from .errors import ApiError


class GarbageCollector(ControllerLoop):
    name = "gc"

    def __init__(self, api: ApiServer):
        super().__init__(api)

    def reconcile_all(self) -> None:
        self.sweep()

    def sweep(self) -> None:
        """One pass over the cluster (tests may call it directly to step the controller)."""
        api = self.api
        with api.cond:
            by_key = {r.key: r for r in api.resources.values()}
            everything = [(by_key[k[0]], dict(o)) for k, o in api.objects.items()]
        by_uid = {o["metadata"]["uid"]: (r, o) for r, o in everything}
        for resource, obj in everything:
            refs = obj["metadata"].get("ownerReferences") or []
            if refs and not obj["metadata"].get("deletionTimestamp"):
                self._dependent(resource, obj, refs, by_uid)
        for resource, obj in everything:
            meta = obj["metadata"]
            if not meta.get("deletionTimestamp"):
                continue
            finalizers = meta.get("finalizers") or []
            if "orphan" in finalizers:
                self._orphan(resource, obj)
            elif "foregroundDeletion" in finalizers:
                blocking = [
                    o
                    for _, o in api.dependents(meta["uid"])
                    if any(
                        ref.get("uid") == meta["uid"] and ref.get("blockOwnerDeletion")
                        for ref in o["metadata"].get("ownerReferences") or []
                    )
                ]
                if not blocking:
                    self._drop_finalizer(resource, obj, "foregroundDeletion")
            if resource.plural == "namespaces":
                self._empty_namespace(obj)

    def _dependent(self, resource: Any, obj: dict[str, Any], refs: list[dict[str, Any]], by_uid: dict) -> None:
        solid, dangling, waiting = [], [], []
        for ref in refs:
            owner = by_uid.get(ref.get("uid"))
            if owner is None:
                dangling.append(ref)
            elif owner[1]["metadata"].get("deletionTimestamp") and "foregroundDeletion" in (
                owner[1]["metadata"].get("finalizers") or []
            ):
                waiting.append(ref)
            else:
                solid.append(ref)
        meta = obj["metadata"]
        try:
            if solid:
                if dangling or waiting:
                    gone = {r.get("uid") for r in dangling + waiting}
                    self.api.patch(
                        resource,
                        meta.get("namespace", ""),
                        meta["name"],
                        {
                            "metadata": {
                                "ownerReferences": [r for r in refs if r.get("uid") not in gone],
                                "resourceVersion": meta["resourceVersion"],
                            }
                        },
                        "application/merge-patch+json",
                    )
                return
            finalizers = meta.get("finalizers") or []
            if waiting and self.api.dependents(meta["uid"]):
                policy = "Foreground"
            elif "orphan" in finalizers:
                policy = "Orphan"
            elif "foregroundDeletion" in finalizers:
                policy = "Foreground"
            else:
                policy = "Background"
            self.api.delete(
                resource,
                meta.get("namespace", ""),
                meta["name"],
                propagation=policy,
                preconditions={"uid": meta["uid"]},
            )
        except ApiError as error:
            if error.code not in (404, 409):
                raise

    def _orphan(self, resource: Any, obj: dict[str, Any]) -> None:
        uid = obj["metadata"]["uid"]
        for dep_resource, dep in self.api.dependents(uid):
            refs = [r for r in dep["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
            try:
                self.api.patch(
                    dep_resource,
                    dep["metadata"].get("namespace", ""),
                    dep["metadata"]["name"],
                    {"metadata": {"ownerReferences": refs or None}},
                    "application/merge-patch+json",
                )
            except ApiError as error:
                if error.code not in (404, 409):
                    raise
        self._drop_finalizer(resource, obj, "orphan")

    def _drop_finalizer(self, resource: Any, obj: dict[str, Any], finalizer: str) -> None:
        meta = obj["metadata"]
        try:
            current = self.api.get(resource, meta.get("namespace", ""), meta["name"])
            finalizers = [f for f in current["metadata"].get("finalizers") or [] if f != finalizer]
            current["metadata"]["finalizers"] = finalizers
            self.api.update(resource, current, meta.get("namespace", ""))
        except ApiError as error:
            if error.code not in (404, 409):
                raise

    def _empty_namespace(self, namespace: dict[str, Any]) -> None:
        name = namespace["metadata"]["name"]
        api = self.api
        with api.cond:
            by_key = {r.key: r for r in api.resources.values()}
            inside = [(by_key[k[0]], o) for k, o in api.objects.items() if k[1] == name]
        for resource, obj in inside:
            if not obj["metadata"].get("deletionTimestamp"):
                try:
                    api.delete(resource, name, obj["metadata"]["name"])
                except ApiError as error:
                    if error.code != 404:
                        raise
        if not inside:
            api.remove(api.resource("", "v1", "namespaces"), "", name)
