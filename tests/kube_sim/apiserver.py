"""The simulated API server's registry: storage with resource versions and a bounded history,
validation and defaulting, graceful deletion and finalizers, lists in pages, watches.

Everything here is in-process and synchronous; `http.py` puts it on 127.0.0.1 for the official
client, and the simulated controllers (garbage collector, operators, kubelet) call it directly,
as a real controller calls the API server: they never touch the storage underneath.
"""

from __future__ import annotations

import base64
import itertools
import json
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from . import defaults, errors, field_manager, schema
from .authentication import Authenticator
from .authorization import Authorizer
from .clone import clone
from .errors import ApiError
from .resources import (
    BUILTIN,
    MPI_OPERATOR_CRD,
    Resource,
    from_crd,
    kubeflow_crds,
    load_crd,
    trainer_version,
    training_runtimes,
    trainjob_crd,
)
from .selectors import field_matcher, label_matcher

Obj = dict[str, Any]
Key = tuple[str, str, str]  # (resource key, namespace, name)

GROUP_TRAINER = "trainer.kubeflow.org"
#: The MXJob CRD: served by training-operator v1.8 and earlier; v1.9.0 removed MXNet support
#: (kubeflow/training-operator v1.9.0: no pkg/controller.v1/mxnet, no kubeflow.org_mxjobs.yaml in
#: manifests/base/crds), so `ApiServer(mxjob=False)` is a cluster running v1.9.
MXJOB_CRD = "mxjobs.kubeflow.org"

#: Admission plug-ins: called with (operation, resource, object, old object) before a write is
#: stored; they may change the object (mutating) or raise an ApiError (validating).
Admission = Callable[[str, Resource, Obj, Obj | None], None]


#: apimachinery v1.33.0 pkg/util/rand/rand.go `alphanums`: no vowels (no words), no 0/1/3 (no
#: confusion with o/l/e)
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def generate_name(base: str) -> str:
    """apiserver v1.33.0 pkg/storage/names/generate.go SimpleNameGenerator: the base cut to
    63 - 5 characters, then 5 random characters of `NAME_ALPHABET`."""
    return base[:58] + "".join(secrets.choice(NAME_ALPHABET) for _ in range(5))


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def rfc3339(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


@dataclass
class Event:
    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    key: Key
    obj: Obj
    prev: Obj | None


@dataclass
class Fault:
    """An injected failure: the `nth` matching call of `method` on `plural` fails, `times` times."""

    method: str
    plural: str
    status: int
    reason: str
    message: str
    nth: int = 1
    times: int = 1
    #: the call is carried out and only its answer is this error (a proxy's 504 after the write)
    lost: bool = False


#: kubernetes v1.33.0 staging/src/k8s.io/apiserver/pkg/storage/errors.go (via
#: storage/etcd3/store.go): the answer to a `continue` token older than the compacted revision.
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new "
    "list without the continue parameter, or use the continue token in this response to retrieve the "
    "remainder of the results. Continuing with the provided token results in an inconsistent list - objects "
    "that were created, modified, or deleted between the time the first chunk was returned and now may show "
    "up in the list."
)


class ApiServer:
    """The cluster's state and the API's rules. `history` is how many changes are kept for
    watches and paged lists (the watch cache's capacity, etcd's compaction): older resource
    versions answer 410 Expired."""

    def __init__(
        self,
        namespaces: tuple[str, ...] = ("default",),
        crds: bool | tuple[str, ...] = True,
        history: int = 1000,
        version: str = "1.33.0",
        trainer: str = "2.3",
        mpi_operator: bool = False,
        mxjob: bool = True,
    ):
        self.cond = threading.Condition(threading.RLock())
        self.resources: dict[tuple[str, str, str], Resource] = {}
        self.objects: dict[Key, Obj] = {}
        self.events: list[Event] = []
        self.history = history
        #: the state at `compacted_rv` (what a paged list is rebuilt from) and that revision
        self._base: dict[Key, Obj] = {}
        self.compacted_rv = 0
        self.rv = 0
        #: the resource version of the last change to anything but Events: what controllers wake
        #: on (a controller that records an event must not wake itself)
        self.changes = 0
        self.version = version
        #: the Kubeflow Trainer release served: its TrainJob CRD, webhook and controller rules
        self.trainer = trainer_version(trainer)
        self.admission: list[Admission] = []
        self.faults: list[Fault] = []
        #: what the HTTP API's user may do (the controllers call the registry, unrefused)
        self.authorizer = Authorizer()
        #: who HTTP requests come from (tokens; authentication.py)
        self.authenticator = Authenticator()
        #: (method, plural) calls read and never answered while listed (see `HttpFrontend.hang`),
        #: and how many wait so now
        self.hanging: set[tuple[str, str]] = set()
        self.hung = 0
        self.requests: list[tuple[str, str]] = []
        #: every watch opened over HTTP: (resource plural, namespace, label selector)
        self.watches: list[tuple[str, str, str | None]] = []
        self.latency = 0.0
        #: requests being served now, and the most at once (what a client's parallelism reaches)
        self.in_flight = 0
        self.max_in_flight = 0
        #: seconds between watch bookmarks (the watch cache sends one about once a minute)
        self.bookmark_interval = 60.0
        #: (requests per second, burst) above which requests get 429, or None
        self.rate_limit: tuple[float, int] | None = None
        self._bucket: tuple[float, float] = (0.0, 0.0)
        self.closed = False
        #: the kubelet's log reader, set when one runs: (namespace, pod, container, query) -> lines
        self.log_source: Callable[..., Iterator[bytes]] | None = None
        #: the kubelet that serves exec, attach and port-forward (kubelet_streams.py), when one runs
        self.streamer: Any = None
        self._clusterip = itertools.count(10)
        for resource in BUILTIN:
            self.register(resource)
        if crds:
            # True: every Kubeflow CRD of tests/data/crds; a tuple: only those named
            # ("pytorchjobs.kubeflow.org", ...), as on a cluster with part of Kubeflow installed
            for path in kubeflow_crds():
                crd = load_crd(path)
                if crd["metadata"]["name"] == "trainjobs.trainer.kubeflow.org":
                    crd = load_crd(trainjob_crd(trainer) or path)
                if crd["metadata"]["name"] == "mpijobs.kubeflow.org" and mpi_operator:
                    crd = load_crd(MPI_OPERATOR_CRD)  # one MPIJob CRD per cluster: mpi-operator's
                if crd["metadata"]["name"] == MXJOB_CRD and not mxjob:
                    continue  # a training operator of v1.9 or later: MXNet was removed (MXJOB_CRD)
                if crds is True or crd["metadata"]["name"] in crds:
                    self.install_crd(crd)
        for name in namespaces:
            self.create(self.resource("", "v1", "namespaces"), {"metadata": {"name": name}})
        from .admission import Admission, TrainJobWebhook

        Admission(self).install()
        trainer = (GROUP_TRAINER, "v1alpha1", "clustertrainingruntimes") in self.resources
        if crds:
            from . import jobset_controller

            jobset_controller.install(self)  # JobSet's resource and defaulting webhook
        if trainer:
            TrainJobWebhook(self).install()
            for path in training_runtimes():
                # the runtimes a Trainer install ships (kubeflow/trainer manifests/base/runtimes)
                runtime = load_crd(path)
                self.create(self.resource("trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes"), runtime)
            if self.trainer >= (2, 3):
                # kubeflow/trainer v2.3.0 manifests/overlays/manager/kustomization.yaml: the public
                # ConfigMap the Kubeflow SDK reads the control plane's version from, in the
                # install's namespace
                if self.try_get(self.resource("", "v1", "namespaces"), "", "kubeflow-system") is None:
                    self.create(self.resource("", "v1", "namespaces"), {"metadata": {"name": "kubeflow-system"}})
                self.create(
                    self.resource("", "v1", "configmaps"),
                    {"metadata": {"name": "kubeflow-trainer-public"}, "data": {"kubeflow_trainer_version": "v2.3.0"}},
                    "kubeflow-system",
                )

    # ---- types ---------------------------------------------------------------------------------

    def register(self, resource: Resource) -> None:
        self.resources[(resource.group, resource.version, resource.plural)] = resource

    def resource(self, group: str, version: str, plural: str) -> Resource:
        found = self.resources.get((group, version, plural))
        if found is None:
            raise errors.not_found_path()
        return found

    def by_kind(self, api_version: str, kind: str) -> Resource:
        group, _, version = api_version.rpartition("/")
        for resource in self.resources.values():
            if resource.group == group and resource.version == version and resource.kind == kind:
                return resource
        raise errors.not_found_path()

    def install_crd(self, crd: Obj) -> Obj:
        """Create a CRD (as `kubectl apply` would) and serve its kinds."""
        crds = self.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        name = crd["metadata"]["name"]
        try:
            return self.create(crds, crd)
        except ApiError as error:
            if error.code != 409:
                raise
            return self.get(crds, "", name)

    # ---- storage -------------------------------------------------------------------------------

    def _commit(self, kind: str, key: Key, obj: Obj | None, prev: Obj | None) -> None:
        """Store a change under the next resource version, notify watchers, compact history."""
        self.rv += 1
        if obj is not None:
            obj["metadata"]["resourceVersion"] = str(self.rv)
            self.objects[key] = obj
            recorded = clone(obj)
        else:
            assert prev is not None
            self.objects.pop(key, None)
            recorded = clone(prev)
            recorded["metadata"]["resourceVersion"] = str(self.rv)
        self.events.append(Event(self.rv, kind, key, recorded, clone(prev) if prev else None))
        if not key[0].endswith("/events"):
            self.changes = self.rv
        while len(self.events) > self.history:
            self._compact_one()
        self.cond.notify_all()

    def _compact_one(self) -> None:
        event = self.events.pop(0)
        if event.type == "DELETED":
            self._base.pop(event.key, None)
        else:
            self._base[event.key] = event.obj
        self.compacted_rv = event.rv

    def compact(self) -> None:
        """Forget all history (etcd compaction): older versions answer 410 from now on."""
        with self.cond:
            while self.events:
                self._compact_one()
            self.compacted_rv = self.rv

    def _state_at(self, rv: int) -> dict[Key, Obj]:
        if rv < self.compacted_rv:
            raise errors.expired(CONTINUE_EXPIRED)
        state = dict(self._base)
        for event in self.events:
            if event.rv > rv:
                break
            if event.type == "DELETED":
                state.pop(event.key, None)
            else:
                state[event.key] = event.obj
        return state

    # ---- reads ---------------------------------------------------------------------------------

    def _check_namespace(self, resource: Resource, namespace: str) -> None:
        if resource.namespaced and not namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )

    def get(self, resource: Resource, namespace: str, name: str) -> Obj:
        with self.cond:
            obj = self.objects.get((resource.key, namespace if resource.namespaced else "", name))
            if obj is None:
                raise errors.not_found(resource.plural, resource.group, name)
            return clone(obj)

    def try_get(self, resource: Resource, namespace: str, name: str) -> Obj | None:
        try:
            return self.get(resource, namespace, name)
        except ApiError:
            return None

    def _matches(self, resource: Resource, key: Key, obj: Obj, namespace: str, labels: Any, fields: Any) -> bool:
        return (
            key[0] == resource.key
            and (not namespace or key[1] == namespace)
            and labels(obj["metadata"].get("labels") or {})
            and fields(obj)
        )

    def list(
        self,
        resource: Resource,
        namespace: str = "",
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = 0,
        continue_token: str | None = None,
        resource_version: str | None = None,
    ) -> Obj:
        """A list as the API server answers it: sorted by key, `limit` with a `continue` token
        that serves the rest of the same snapshot (storage/etcd3/store.go GetList), 410 once that
        snapshot is compacted away. `resourceVersion=0` is served from the cache and ignores
        `limit` (staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go GetList)."""
        labels = label_matcher(label_selector)
        fields = field_matcher(field_selector, resource.plural)
        with self.cond:
            start = ""
            if continue_token:
                try:
                    token = json.loads(base64.b64decode(continue_token))
                    rv, start = int(token["rv"]), token["start"]
                except (ValueError, KeyError, TypeError):
                    raise errors.bad_request(
                        "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
                    )
                try:
                    state = self._state_at(rv)
                except ApiError as error:
                    error.status["metadata"] = {}
                    raise
            else:
                rv = self.rv
                state = self.objects
                if resource_version == "0":
                    limit = 0
            keys = sorted(
                k
                for k, o in state.items()
                if self._matches(resource, k, o, namespace, labels, fields) and "/".join(k[1:]) >= start
            )
            page = keys[:limit] if limit else keys
            items = [clone(state[k]) for k in page]
            metadata: Obj = {"resourceVersion": str(rv)}
            if limit and len(keys) > limit:
                last = page[-1]
                token = {"v": "meta.k8s.io/v1", "rv": rv, "start": "/".join(last[1:]) + "\x00"}
                metadata["continue"] = base64.b64encode(json.dumps(token).encode()).decode()
                metadata["remainingItemCount"] = len(keys) - limit
        for item in items:
            item.setdefault("apiVersion", resource.api_version)
            item.setdefault("kind", resource.kind)
        return {
            "kind": f"{resource.kind}List",
            "apiVersion": resource.api_version,
            "metadata": metadata,
            "items": items,
        }

    # ---- writes --------------------------------------------------------------------------------

    def _prepare(self, resource: Resource, obj: Obj, strict: bool) -> tuple[list[str], list[errors.FieldError]]:
        """Decode and prune (custom resources: also default); returns the warnings (unknown
        fields) and the schema's field errors (reported with the others by `_validate`)."""
        warnings: list[str] = []
        obj["apiVersion"] = resource.api_version
        obj["kind"] = resource.kind
        obj.setdefault("metadata", {})
        if resource.schema is not None:
            # apiextensions: unknown fields are dropped silently (pruning), then defaults
            schema.prune(obj, resource.schema)
            schema.default(obj, resource.schema)
            return warnings, []
        if resource.kind in ("CustomResourceDefinition",):
            return warnings, []
        try:
            unknown, errs = schema.check_core(obj)
        except schema.DecodeError as error:
            raise errors.bad_request(str(error))
        except Exception:  # a kind kubernetes-validate has no schema for: accept it as it is
            unknown, errs = [], []
        if unknown:
            # staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go fieldValidation: Strict
            # refuses (`strict decoding error: unknown field "spec.foo"`); the default (Warn since
            # v1.27) drops the field and answers a `Warning: 299` header per field
            if strict:
                raise errors.bad_request("strict decoding error: " + ", ".join(f'unknown field "{u}"' for u in unknown))
            schema.drop_unknown(obj, unknown)
            warnings += [f'unknown field "{u}"' for u in unknown]
        return warnings, errs

    def _validate(
        self, resource: Resource, obj: Obj, schema_errors: list[errors.FieldError], old: Obj | None = None
    ) -> None:
        meta = obj["metadata"]
        name = meta.get("name") or ""
        errs: list[errors.FieldError] = list(schema_errors)
        if resource.schema is not None:
            errs += schema.validate_structural(
                obj, resource.schema, "", old if old is not None else schema._MISSING, root=True
            )
        if not name:
            # ValidateObjectMeta: `metadata.name: Required value: name or generateName is required`
            errs.insert(0, errors.required("metadata.name", "name or generateName is required"))
        else:
            errs[:0] = schema.name_errors(name, resource.name_rule)
        if resource.plural == "pods":
            errs += schema.pod_spec_errors(obj.get("spec") or {})
        if resource.group == "batch" and resource.plural == "jobs":
            template = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
            errs += schema.pod_spec_errors(template, "spec.template.spec")
            policy = template.get("restartPolicy")
            if policy not in ("OnFailure", "Never"):
                # pkg/apis/batch/validation/validation.go validateJobSpec
                if policy is None:
                    errs.append(
                        errors.FieldError(
                            "FieldValueRequired",
                            "spec.template.spec.restartPolicy",
                            detail='valid values: "OnFailure", "Never"',
                        )
                    )
                else:
                    errs.append(
                        errors.not_supported("spec.template.spec.restartPolicy", policy, ("OnFailure", "Never"))
                    )
        if errs:
            raise errors.invalid_object(resource.kind, resource.group, name, errs)

    def create(
        self,
        resource: Resource,
        obj: Obj,
        namespace: str = "",
        strict: bool = False,
        dry_run: bool = False,
        manager: str | None = None,
    ) -> Obj:
        obj = clone(obj)
        meta = obj.setdefault("metadata", {}) or {}
        obj["metadata"] = meta
        if resource.namespaced:
            namespace = namespace or meta.get("namespace") or ""
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
        else:
            namespace = ""
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = generate_name(meta["generateName"])
        warnings, schema_errors = self._prepare(resource, obj, strict)
        with self.cond:
            self._check_namespace(resource, namespace)
            if resource.namespaced:
                ns = self.objects.get(("/namespaces", "", namespace))
                if ns is None:
                    raise errors.not_found("namespaces", "", namespace)
                if ns["metadata"].get("deletionTimestamp"):
                    # pkg/admission/plugin/namespace/lifecycle/admission.go
                    raise errors.forbidden(
                        resource.plural,
                        resource.group,
                        meta.get("name") or "",
                        f"unable to create new content in namespace {namespace} because it is being terminated",
                    )
            if namespace:
                meta["namespace"] = namespace
            defaults.apply(resource, obj, self)
            self._validate(resource, obj, schema_errors)
            key = (resource.key, namespace, meta["name"])
            if key in self.objects:
                raise errors.already_exists(resource.plural, resource.group, meta["name"])
            for plugin in self.admission:
                plugin("CREATE", resource, obj, None)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now()
            meta["generation"] = 1
            if resource.group == "batch" and resource.plural == "jobs":
                from .job_controller import default_job

                default_job(obj)  # the registry's generateSelector needs the uid
            for transient in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
                meta.pop(transient, None)
            if resource.schema is not None and resource.status_subresource:
                obj.pop("status", None)  # the status subresource: create ignores status
            if manager:
                field_manager.record_update(obj, None, manager, resource.api_version, now())
            if dry_run:
                return obj
            self._commit("ADDED", key, obj, None)
            if resource.plural == "customresourcedefinitions":
                for served in from_crd(obj):
                    self.register(served)
            if resource.plural == "namespaces" and not resource.group:
                # kube-controller-manager's service account controller (kubernetes v1.33.0
                # pkg/controller/serviceaccount/serviceaccounts_controller.go syncNamespace):
                # every namespace gets a `default` ServiceAccount; here in the same step
                self.create(self.resource("", "v1", "serviceaccounts"), {"metadata": {"name": "default"}}, meta["name"])
            out = clone(obj)
        if warnings:
            out.setdefault("__warnings__", warnings)
        return out

    def update(
        self,
        resource: Resource,
        obj: Obj,
        namespace: str = "",
        subresource: str = "",
        strict: bool = False,
        manager: str | None = None,
    ) -> Obj:
        """PUT: replace, with optimistic concurrency on metadata.resourceVersion; the status
        subresource changes only status, the main resource leaves status alone (when the kind has
        a status subresource). Removing the last finalizer of a deleted object deletes it."""
        obj = clone(obj)
        meta = obj.setdefault("metadata", {})
        name = meta.get("name") or ""
        namespace = namespace if resource.namespaced else ""
        with self.cond:
            key = (resource.key, namespace, name)
            old = self.objects.get(key)
            if old is None:
                raise errors.not_found(resource.plural, resource.group, name)
            given = meta.get("resourceVersion")
            if given and given != old["metadata"]["resourceVersion"]:
                raise errors.conflict(resource.plural, resource.group, name, errors.OPTIMISTIC_LOCK)
            if not given and resource.schema is not None:
                # customresource strategy: AllowUnconditionalUpdate is false
                raise errors.invalid_object(
                    resource.kind,
                    resource.group,
                    name,
                    [errors.invalid("metadata.resourceVersion", "0x0", "must be specified for an update")],
                )
            if subresource == "status":
                new = clone(old)
                new["status"] = obj.get("status")
                if new["status"] is None:
                    new.pop("status")
            else:
                _, schema_errors = self._prepare(resource, obj, strict)
                new = obj
                for fixed in (
                    "uid",
                    "creationTimestamp",
                    "deletionTimestamp",
                    "deletionGracePeriodSeconds",
                    "generation",
                    "namespace",
                ):
                    if fixed in old["metadata"]:
                        new["metadata"][fixed] = old["metadata"][fixed]
                    else:
                        new["metadata"].pop(fixed, None)
                if resource.status_subresource:
                    if "status" in old:
                        new["status"] = clone(old["status"])
                    else:
                        new.pop("status", None)
                defaults.apply(resource, new, self)
                self._validate(resource, new, schema_errors, old)
                defaults.check_update(resource, new, old)
                if _spec_of(new) != _spec_of(old):
                    new["metadata"]["generation"] = int(old["metadata"].get("generation", 1)) + 1
                if "managedFields" not in new["metadata"] and old["metadata"].get("managedFields"):
                    new["metadata"]["managedFields"] = clone(old["metadata"]["managedFields"])
                if manager:
                    field_manager.record_update(new, old, manager, resource.api_version, now())
            for plugin in self.admission:
                plugin("UPDATE", resource, new, old)
            if (
                new["metadata"].get("deletionTimestamp")
                and not new["metadata"].get("finalizers")
                and (resource.plural != "pods" or not old["metadata"].get("deletionGracePeriodSeconds"))
            ):
                # store.go Update: deleteWithoutFinalizers once the last finalizer is gone
                self._commit("MODIFIED", key, new, old)
                self._commit("DELETED", key, None, self.objects[key])
                return clone(new)
            self._commit("MODIFIED", key, new, old)
            return clone(new)

    def patch(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        patch: Any,
        content_type: str,
        subresource: str = "",
        manager: str | None = None,
    ) -> Obj:
        with self.cond:
            current = self.get(resource, namespace, name)
            patched = apply_patch(current, patch, content_type)
            patched.setdefault("metadata", {})["resourceVersion"] = current["metadata"]["resourceVersion"]
            patched["metadata"]["name"] = name
            return self.update(resource, patched, namespace, subresource, manager=manager)

    def apply(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        applied: Obj,
        manager: str,
        force: bool = False,
        dry_run: bool = False,
    ) -> Obj:
        """Server-side apply (field_manager.py): create the object, or merge the applied
        configuration into it; 409 on conflicts with other managers unless `force`."""
        if not isinstance(applied, dict):
            raise errors.bad_request("error decoding YAML: the applied configuration is not an object")
        meta = applied.setdefault("metadata", {})
        if meta.get("name") not in (None, name):
            raise errors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
            )
        meta["name"] = name
        if applied.get("kind") != resource.kind or applied.get("apiVersion") != resource.api_version:
            raise errors.bad_request(
                f"the API version in the data ({applied.get('apiVersion')}) does not match the expected API version "
                f"({resource.api_version})"
            )
        with self.cond:
            live = self.try_get(resource, namespace, name)
            merged = field_manager.apply(live, applied, manager, force, resource.api_version, now())
            if live is None:
                return self.create(resource, merged, namespace, dry_run=dry_run)
            merged["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
            if dry_run:
                return merged
            return self.update(resource, merged, namespace)

    # ---- deletion ------------------------------------------------------------------------------

    def delete(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        grace: int | None = None,
        propagation: str | None = None,
        preconditions: Obj | None = None,
    ) -> Obj:
        """DELETE as staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go Delete
        and pkg/registry/rest/delete.go BeforeDelete do it:
        - pods are deleted gracefully (pkg/registry/core/pod/strategy.go CheckGracefulDelete):
          `deletionTimestamp` = now + grace, grace = the request's or the pod's
          `terminationGracePeriodSeconds` (default 30); 0 for a pod never scheduled or already
          Succeeded/Failed; the kubelet stops the containers and then removes the pod;
        - `propagationPolicy=Foreground` adds the `foregroundDeletion` finalizer, `Orphan` the
          `orphan` finalizer (store.go updateForGracefulDeletionAndFinalizers); Background (the
          default) deletes the owner now and leaves the dependents to the garbage collector;
        - an object with finalizers is only marked (deletionTimestamp); it goes once they are gone.
        Dependents are never touched here: the garbage collector does it, later."""
        namespace = namespace if resource.namespaced else ""
        with self.cond:
            key = (resource.key, namespace, name)
            old = self.objects.get(key)
            if old is None:
                raise errors.not_found(resource.plural, resource.group, name)
            if preconditions and preconditions.get("uid") and preconditions["uid"] != old["metadata"]["uid"]:
                raise errors.conflict(
                    resource.plural,
                    resource.group,
                    name,
                    f"Precondition failed: UID in precondition: {preconditions['uid']}, "
                    f"UID in object meta: {old['metadata']['uid']}",
                )
            meta = old["metadata"]
            finalizers = list(meta.get("finalizers") or [])
            if propagation == "Foreground" and "foregroundDeletion" not in finalizers:
                finalizers.append("foregroundDeletion")
            elif propagation == "Orphan" and "orphan" not in finalizers:
                finalizers.append("orphan")
            if resource.plural == "pods":
                grace = defaults.pod_grace(old, grace)
            else:
                grace = 0
            if resource.plural == "namespaces":
                # the namespace controller empties it, then removes it (spec.finalizers: kubernetes)
                grace = 0
            if meta.get("deletionTimestamp"):
                # already being deleted: a shorter grace period shortens it, nothing else changes
                current = meta.get("deletionGracePeriodSeconds") or 0
                if grace == 0 and not finalizers and resource.plural == "pods":
                    self._commit("DELETED", key, None, old)
                    return _deleted(resource, old)
                if 0 < grace < current:
                    new = clone(old)
                    new["metadata"]["deletionGracePeriodSeconds"] = grace
                    new["metadata"]["deletionTimestamp"] = rfc3339(time.time() + grace)
                    self._commit("MODIFIED", key, new, old)
                    return clone(new)
                return clone(old)
            if grace == 0 and not finalizers and resource.plural != "namespaces":
                self._commit("DELETED", key, None, old)
                return _deleted(resource, old)
            new = clone(old)
            new["metadata"]["deletionTimestamp"] = rfc3339(time.time() + grace)
            new["metadata"]["deletionGracePeriodSeconds"] = grace
            if finalizers:
                new["metadata"]["finalizers"] = finalizers
            if resource.plural == "namespaces":
                new.setdefault("status", {})["phase"] = "Terminating"
            self._commit("MODIFIED", key, new, old)
            return clone(new)

    def remove(self, resource: Resource, namespace: str, name: str, uid: str | None = None) -> None:
        """The last step of a graceful deletion (the kubelet's grace-0 delete of a stopped pod)."""
        with self.cond:
            key = (resource.key, namespace if resource.namespaced else "", name)
            old = self.objects.get(key)
            if old is not None and (uid is None or old["metadata"]["uid"] == uid):
                if old["metadata"].get("finalizers"):
                    return
                self._commit("DELETED", key, None, old)

    def delete_collection(
        self,
        resource: Resource,
        namespace: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
        grace: int | None = None,
        propagation: str | None = None,
    ) -> Obj:
        listed = self.list(resource, namespace, label_selector, field_selector)
        out = []
        for item in listed["items"]:
            try:
                out.append(self.delete(resource, namespace, item["metadata"]["name"], grace, propagation))
            except ApiError as error:
                if error.code != 404:
                    raise
        return {
            "kind": f"{resource.kind}List",
            "apiVersion": resource.api_version,
            "metadata": {"resourceVersion": str(self.rv)},
            "items": out,
        }

    # ---- watches -------------------------------------------------------------------------------

    def watch(
        self,
        resource: Resource,
        namespace: str = "",
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout: float = 1800.0,
        bookmarks: bool = False,
    ) -> Iterator[Obj]:
        """Watch events (`{"type", "object"}`), as the watch cache serves them
        (staging/src/k8s.io/apiserver/pkg/storage/cacher/watch_cache.go):
        - no resourceVersion, or "0": ADDED for every current object first, then changes;
        - a version: the changes after it; one older than the oldest kept (`rv < oldest-1`) gives
          one ERROR event with a 410 `Expired` Status `too old resource version: %d (%d)`
          (cacher.go: "a watch that fails with a 410 event", not an HTTP error);
        - a change that makes an object stop (start) matching the selector is sent as DELETED
          (ADDED) (cacher/cache_watcher.go convertToWatchEvent);
        - BOOKMARK events, when asked, carry only the kind and the current resourceVersion;
        - the stream ends at `timeoutSeconds`.
        A bad selector or version raises here, before any event (an HTTP error, not a stream)."""
        labels = label_matcher(label_selector)
        fields = field_matcher(field_selector, resource.plural)
        if resource_version and resource_version != "0" and not resource_version.isdigit():
            raise errors.bad_request(f'invalid resource version "{resource_version}"')
        return self._watch(resource, namespace, resource_version, labels, fields, timeout, bookmarks)

    def _watch(
        self,
        resource: Resource,
        namespace: str,
        resource_version: str | None,
        labels: Any,
        fields: Any,
        timeout: float,
        bookmarks: bool,
    ) -> Iterator[Obj]:
        deadline = time.monotonic() + timeout

        def visible(key: Key, obj: Obj | None) -> bool:
            return obj is not None and self._matches(resource, key, obj, namespace, labels, fields)

        def shown(obj: Obj) -> Obj:
            obj = clone(obj)
            obj.setdefault("apiVersion", resource.api_version)
            obj.setdefault("kind", resource.kind)
            return obj

        with self.cond:
            if not resource_version or resource_version == "0":
                initial = [shown(o) for k, o in sorted(self.objects.items()) if visible(k, o)]
                position = self.rv
            else:
                position = int(resource_version)
                oldest = self.events[0].rv if self.events else self.rv + 1
                if position < oldest - 1:
                    expired = errors.expired(f"too old resource version: {position} ({oldest - 1})").status
                    yield {"type": "ERROR", "object": expired}
                    return
                initial = []
        for obj in initial:
            yield {"type": "ADDED", "object": obj}
        last_bookmark = time.monotonic()
        while True:
            batch: list[Event] = []
            with self.cond:
                while not self.closed and time.monotonic() < deadline:
                    if self.events and self.events[-1].rv > position:
                        break
                    if bookmarks and time.monotonic() - last_bookmark >= self.bookmark_interval:
                        break
                    wait = deadline - time.monotonic()
                    if bookmarks:
                        wait = min(wait, self.bookmark_interval - (time.monotonic() - last_bookmark))
                    self.cond.wait(max(0.0, min(wait, 1.0)))
                if self.closed or time.monotonic() >= deadline:
                    return
                if self.events and self.events[0].rv > position + 1:
                    oldest = self.events[0].rv
                    yield {
                        "type": "ERROR",
                        "object": errors.expired(f"too old resource version: {position} ({oldest - 1})").status,
                    }
                    return
                batch = [e for e in self.events if e.rv > position]
                if batch:
                    position = batch[-1].rv
                current_rv = self.rv
            for event in batch:
                now_visible = event.type != "DELETED" and visible(event.key, event.obj)
                was_visible = event.prev is not None and visible(event.key, event.prev)
                if event.type == "DELETED":
                    if visible(event.key, event.obj):
                        yield {"type": "DELETED", "object": shown(event.obj)}
                elif now_visible and (was_visible or event.type == "ADDED"):
                    yield {"type": event.type, "object": shown(event.obj)}
                elif now_visible:
                    yield {"type": "ADDED", "object": shown(event.obj)}
                elif was_visible:
                    gone = shown(event.obj)
                    yield {"type": "DELETED", "object": gone}
            if bookmarks and time.monotonic() - last_bookmark >= self.bookmark_interval:
                last_bookmark = time.monotonic()
                yield {
                    "type": "BOOKMARK",
                    "object": {
                        "kind": resource.kind,
                        "apiVersion": resource.api_version,
                        "metadata": {"resourceVersion": str(current_rv)},
                    },
                }

    # ---- faults and limits (for tests) --------------------------------------------------------

    def fail(
        self,
        method: str,
        plural: str,
        status: int,
        reason: str,
        message: str,
        nth: int = 1,
        times: int = 1,
        lost: bool = False,
    ) -> None:
        with self.cond:
            self.faults.append(Fault(method, plural, status, reason, message, nth, times, lost))

    def deny(self, verb: str, resource: str, group: str = "*", namespace: str = "*") -> None:
        """The HTTP API's user may no longer `verb` `resource` (see authorization.py)."""
        self.authorizer.deny(verb, resource, group, namespace)

    def take_fault(self, method: str, plural: str) -> Fault | None:
        with self.cond:
            for fault in self.faults:
                if fault.method == method and fault.plural == plural and fault.times > 0:
                    fault.nth -= 1
                    if fault.nth <= 0:
                        fault.times -= 1
                        return fault
        return None

    def admit_rate(self) -> None:
        """A token bucket: over `rate_limit` a request gets 429 with Retry-After, as the
        max-in-flight and priority-and-fairness filters answer."""
        if not self.rate_limit:
            return
        qps, burst = self.rate_limit
        with self.cond:
            tokens, stamp = self._bucket
            current = time.monotonic()
            tokens = min(float(burst), tokens + (current - stamp) * qps if stamp else float(burst))
            if tokens < 1.0:
                self._bucket = (tokens, current)
                raise errors.too_many_requests(1)
            self._bucket = (tokens - 1.0, current)

    # ---- helpers for the simulated controllers ------------------------------------------------

    def dependents(self, uid: str) -> list[tuple[Resource, Obj]]:
        with self.cond:
            by_key = {r.key: r for r in self.resources.values()}
            return [
                (by_key[k[0]], clone(o))
                for k, o in self.objects.items()
                if any(ref.get("uid") == uid for ref in o["metadata"].get("ownerReferences") or [])
            ]

    def wait_for_change(self, seen: int, timeout: float) -> int:
        """For controllers' loops: wait until something other than an Event changed after `seen`
        (or `timeout`); returns the version to pass next time."""
        with self.cond:
            if self.changes == seen:
                self.cond.wait(timeout)
            return self.changes

    def alive(self, uid: str) -> bool:
        with self.cond:
            return any(o["metadata"]["uid"] == uid for o in self.objects.values())


def _spec_of(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


#: Kinds whose registry sets ReturnDeletedObject (pkg/registry/core/pod/storage/storage.go,
#: serviceaccount/storage/storage.go, service/storage/storage.go): an immediate delete answers the
#: object; the others answer a Success Status (store.go finalizeDelete).
RETURNS_DELETED = ("pods", "serviceaccounts", "services")


def _deleted(resource: Resource, obj: Obj) -> Obj:
    if resource.plural in RETURNS_DELETED:
        return clone(obj)
    meta = obj["metadata"]
    details = {"name": meta["name"], "kind": resource.plural, "uid": meta["uid"]}
    if resource.group:
        details["group"] = resource.group
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


# ---- patches -----------------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return clone(patch)
    out = clone(target) if isinstance(target, dict) else {}
    for name, value in patch.items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = merge_patch(out.get(name), value)
    return out


def strategic_merge(target: Any, patch: Any) -> Any:
    """Strategic merge patch, as far as the simulated clients use it: maps merge, `null`
    deletes, lists of objects with a `name` merge by name (the patchMergeKey of containers, env,
    volumes, ports by name), other lists are replaced (staging/src/k8s.io/apimachinery/pkg/util/
    strategicpatch/patch.go)."""
    if isinstance(patch, dict) and isinstance(target, dict):
        out = clone(target)
        for name, value in patch.items():
            if value is None:
                out.pop(name, None)
            else:
                out[name] = strategic_merge(out.get(name), value)
        return out
    if (
        isinstance(patch, list)
        and isinstance(target, list)
        and patch
        and target
        and all(isinstance(i, dict) and "name" in i for i in patch + target)
    ):
        merged = [clone(i) for i in target]
        for item in patch:
            for i, existing in enumerate(merged):
                if existing["name"] == item["name"]:
                    merged[i] = strategic_merge(existing, item)
                    break
            else:
                merged.append(clone(item))
        return merged
    return clone(patch)


def json_patch(target: Any, operations: list[Obj]) -> Any:
    """RFC 6902: add, remove, replace, test (what the simulated clients send)."""
    doc = clone(target)
    for op in operations:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        last = parts[-1]
        if op["op"] == "test":
            current = parent[int(last)] if isinstance(parent, list) else parent.get(last)
            if current != op["value"]:
                raise errors.ApiError(
                    errors.status(422, "Invalid", "the server rejected our request due to an error in our request")
                )
        elif op["op"] == "remove":
            if isinstance(parent, list):
                parent.pop(int(last))
            else:
                parent.pop(last)
        elif isinstance(parent, list):
            if last == "-":
                parent.append(op["value"])
            elif op["op"] == "add":
                parent.insert(int(last), op["value"])
            else:
                parent[int(last)] = op["value"]
        else:
            parent[last] = op["value"]
    return doc


def apply_patch(current: Obj, patch: Any, content_type: str) -> Obj:
    if content_type.startswith("application/json-patch+json"):
        return json_patch(current, patch)
    if content_type.startswith("application/merge-patch+json"):
        return merge_patch(current, patch)
    if content_type.startswith("application/strategic-merge-patch+json"):
        return strategic_merge(current, patch)
    raise errors.ApiError(
        errors.status(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json-patch+json, application/merge-patch+json, "
            "application/strategic-merge-patch+json",
        )
    )
