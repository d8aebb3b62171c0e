"""Defaulting of core objects and the update rules a schema cannot express.

kubernetes v1.33.0 pkg/apis/core/v1/defaults.go (SetDefaults_Pod, SetDefaults_PodSpec,
SetDefaults_Container, SetDefaults_Service, SetDefaults_ServicePort), the ServiceAccount
admission plug-in (plugin/pkg/admission/serviceaccount/admission.go: `default`), the
DefaultTolerationSeconds admission plug-in (300 s for not-ready / unreachable) and the Service
registry's ClusterIP allocation (pkg/registry/core/service/storage/alloc.go).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import errors
from .clone import clone

if TYPE_CHECKING:
    from .apiserver import ApiServer
    from .resources import Resource


def apply(resource: Resource, obj: dict[str, Any], server: ApiServer) -> None:
    if resource.schema is not None:
        return
    if resource.plural == "pods":
        _pod(obj)
    elif resource.plural == "services":
        _service(obj, server)
    elif resource.plural == "namespaces":
        # the NamespaceDefaultLabelName feature (v1.22+): kubernetes.io/metadata.name
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"].get("name", "")
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj.setdefault("status", {}).setdefault("phase", "Active")


def _container(container: dict[str, Any]) -> None:
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    image = container.get("image") or ""
    tag = image.rpartition("/")[2]
    # SetDefaults_Container: Always for `:latest` or no tag, else IfNotPresent
    pull = "Always" if ":" not in tag or tag.endswith(":latest") else "IfNotPresent"
    container.setdefault("imagePullPolicy", pull)
    container.setdefault("resources", {})
    for port in container.get("ports") or []:
        port.setdefault("protocol", "TCP")
    for env in container.get("env") or []:
        ref = (env.get("valueFrom") or {}).get("fieldRef")
        if ref:
            ref.setdefault("apiVersion", "v1")
    resources = container["resources"]
    if resources.get("limits") and not resources.get("requests"):
        # SetDefaults_Container / pkg/apis/core/v1/defaults.go: requests default to limits
        resources["requests"] = clone(resources["limits"])


def _pod(pod: dict[str, Any]) -> None:
    spec = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)
    spec.setdefault("serviceAccountName", spec.get("serviceAccount") or "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or []:
            _container(container)
    tolerations = spec.setdefault("tolerations", [])
    for taint in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(t.get("key") == taint for t in tolerations):
            tolerations.append({"key": taint, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
    status = pod.setdefault("status", {})
    status.setdefault("phase", "Pending")
    status.setdefault("qosClass", qos_class(spec))


def qos_class(spec: dict[str, Any]) -> str:
    """pkg/apis/core/helper/qos/qos.go GetPodQOS: Guaranteed when every container has cpu and
    memory limits equal to requests, BestEffort when none has any, else Burstable."""
    containers = (spec.get("initContainers") or []) + (spec.get("containers") or [])
    any_set = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        if requests or limits:
            any_set = True
        for name in ("cpu", "memory"):
            if name not in limits or str(requests.get(name, limits.get(name))) != str(limits[name]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _service(service: dict[str, Any], server: ApiServer) -> None:
    spec = service.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for port in spec.get("ports") or []:
        port.setdefault("protocol", "TCP")
        port.setdefault("targetPort", port.get("port"))
    if "clusterIP" not in spec:
        spec["clusterIP"] = f"10.96.0.{next(server._clusterip) % 250 + 2}"
    spec.setdefault("clusterIPs", [spec["clusterIP"]])
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    service.setdefault("status", {"loadBalancer": {}})


#: pkg/apis/core/validation/validation.go ValidatePodUpdate's message for a forbidden change.
POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def check_update(resource: Resource, new: dict[str, Any], old: dict[str, Any]) -> None:
    if resource.plural != "pods":
        return
    mutable = clone(new.get("spec") or {})
    before = clone(old.get("spec") or {})
    for spec in (mutable, before):
        for field in ("containers", "initContainers"):
            for container in spec.get(field) or []:
                container.pop("image", None)
        for field in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds"):
            spec.pop(field, None)
    if mutable != before:
        name = new["metadata"].get("name", "")
        raise errors.invalid_object(
            "Pod", "", name, [errors.FieldError("FieldValueForbidden", "spec", detail=POD_UPDATE_FORBIDDEN)]
        )


def pod_grace(pod: dict[str, Any], requested: int | None) -> int:
    """pkg/registry/core/pod/strategy.go CheckGracefulDelete: the request's grace period, else
    the pod's terminationGracePeriodSeconds (default 30); 0 when the pod never got a node or has
    already Succeeded/Failed (nothing runs that could need the time)."""
    grace = requested if requested is not None else (pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
    if not (pod.get("spec") or {}).get("nodeName"):
        return 0
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return 0
    return max(0, int(grace))
