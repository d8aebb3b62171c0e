"""Before anything is created: can this cluster run this run? One line says what is wrong.

In order: the API server answers; the namespace exists; the custom resources are installed and
served (the CRD, e.g. "TFJob is not installed on this cluster"; MXJob needs training-operator
v1.8 or earlier); we may do everything the submit, the follower and stop will do (one
SelfSubjectAccessReview per verb and resource, every missing one listed in one error); and for
Trainer v2, the runtime the TrainJob names exists. `trainer_version` tells, before rendering,
which TrainJob API the cluster serves.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any
from urllib.parse import quote

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError, MaxRetryError, ProtocolError

from ...base import BackendError
from .client import Cluster, api_reason, request
from .create import BACKOFF_MAX_S, BACKOFF_START_S, retry_after
from .resources import KINDS, Kind, kind_of


class PreflightError(BackendError):
    """The cluster cannot take this run; the message says what to do."""


def _broke_before_answer(error: HTTPError) -> bool:
    """A connection reset (or closed: `RemoteDisconnected`) before any answer, as urllib3 raises it
    itself or wrapped in its MaxRetryError once its own retries are spent."""
    reason = getattr(error, "reason", None)
    parts = (*error.args, error.__context__, reason, *(getattr(reason, "args", None) or ()))
    return any(isinstance(part, ConnectionResetError) for part in parts)


def _call(cluster: Cluster, what: str, fn, *args: Any, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)`, its failure said in one line. Every preflight call only reads (an
    access review stores nothing), so a pooled connection reset on reuse (the server or a proxy
    between closed it while idle) is asked again once, on a fresh connection, as client-go's
    transport retries a request on a reused connection that broke before any answer."""
    try:
        try:
            return fn(*args, **kwargs)
        except (ProtocolError, MaxRetryError) as error:
            if not _broke_before_answer(error):
                raise
            return fn(*args, **kwargs)
    except ApiException as error:
        if error.status in (0, None) or error.status >= 500 and error.status != 501:
            raise PreflightError(f"the Kubernetes API at {cluster.host} failed {what}: {api_reason(error)}") from None
        raise
    except (HTTPError, OSError) as error:
        raise PreflightError(f"cannot reach the Kubernetes API at {cluster.host}: {error}") from None


def check_reachable(cluster: Cluster) -> None:
    _call(cluster, "a version request", request, cluster, "GET", "/version", read_timeout=10)


def check_namespace(cluster: Cluster) -> None:
    try:
        namespace = f"/api/v1/namespaces/{quote(cluster.namespace, safe='')}"
        _call(cluster, "reading the namespace", request, cluster, "GET", namespace)
    except ApiException as error:
        if error.status == 404:
            raise PreflightError(
                f"namespace {cluster.namespace!r} does not exist on this cluster: create it "
                f"(kubectl create namespace {cluster.namespace}) or set PX_K8S_NAMESPACE"
            ) from None
        if error.status != 403:  # may not read namespaces: the access review below still tells
            raise PreflightError(f"cannot read namespace {cluster.namespace!r}: {api_reason(error)}") from None


#: What the follower, `stop` and `clean` do on every backend, whatever the run created: watch the
#: run's pods (a job's operator makes them), read their logs, read Warning events (why a run
#: waits), delete the pods still running when a run ends (its follower, once their logs are
#: stored), and list and delete by label what a run leaves (`cleanup.py`: pods, services,
#: configmaps; `clean` names what it removes).
ALWAYS_NEEDED: tuple[tuple[str, str, str], ...] = (
    ("get", "", "pods"),
    ("list", "", "pods"),
    ("watch", "", "pods"),
    ("get", "", "pods/log"),
    ("list", "", "events"),
    ("delete", "", "pods"),
    ("list", "", "services"),
    ("list", "", "configmaps"),
    ("deletecollection", "", "pods"),
    ("deletecollection", "", "services"),
    ("deletecollection", "", "configmaps"),
)
#: What submit, rollback, the follower and stop do to each kind the run creates.
CREATED_KIND_VERBS = ("create", "get", "list", "delete")
#: Access reviews asked at once, and tries of one that a busy server refuses (429).
REVIEWS_AT_ONCE = 8
REVIEW_ATTEMPTS = 6


def required_access(kinds: list[Kind]) -> list[tuple[str, str, str]]:
    """Every (verb, group, resource) the run needs, in the order they are reported."""
    needed = [(verb, kind.group, kind.plural) for kind in kinds for verb in CREATED_KIND_VERBS]
    needed += ALWAYS_NEEDED
    return list(dict.fromkeys(needed))


def _review(cluster: Cluster, verb: str, group: str, resource: str) -> tuple[bool, str]:
    """One SelfSubjectAccessReview: (allowed, the authorizer's reason)."""
    plural, _, subresource = resource.partition("/")
    attributes = {"namespace": cluster.namespace, "verb": verb, "group": group, "resource": plural}
    if subresource:
        attributes["subresource"] = subresource
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }
    reviews = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    for attempt in range(REVIEW_ATTEMPTS):
        try:
            answer = _call(cluster, "an access review", request, cluster, "POST", reviews, body=review)
            break
        except ApiException as error:
            if error.status != 429 or attempt == REVIEW_ATTEMPTS - 1:
                raise PreflightError(f"cannot ask whether we may {verb} {resource}: {api_reason(error)}") from None
            # a busy server's rate limit (a review changes nothing: asking again is safe)
            time.sleep(retry_after(error) or min(BACKOFF_MAX_S, BACKOFF_START_S * 2**attempt))
    status = answer.get("status") or {}
    return bool(status.get("allowed")), status.get("reason") or ""


def check_allowed(cluster: Cluster, needed: list[tuple[str, str, str]]) -> None:
    """Ask (SelfSubjectAccessReview, so RBAC is asked rather than guessed from a failed create)
    for every right in `needed`, a few at a time; one error listing all that are missing."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=REVIEWS_AT_ONCE, thread_name_prefix="px-k8s-review") as pool:
        answers = list(pool.map(lambda need: _review(cluster, *need), needed))
    missing = [
        (f"{verb} {resource}.{group}" if group else f"{verb} {resource}", reason)
        for (verb, group, resource), (allowed, reason) in zip(needed, answers, strict=True)
        if not allowed
    ]
    if not missing:
        return
    what = [text for text, _ in missing]
    listed = what[0] if len(what) == 1 else ", ".join(what[:-1]) + " and " + what[-1]
    reasons = sorted({reason for _, reason in missing if reason})
    why = f" ({'; '.join(reasons)})" if reasons else ""
    raise PreflightError(
        f"no permission to {listed} in namespace {cluster.namespace!r}{why}: ask your cluster admin for a Role "
        "that allows them (the run creates these objects, and its follower watches its pods, reads their logs "
        "and events and deletes what the run leaves), or use another namespace (PX_K8S_NAMESPACE)"
    )


def check_installed(cluster: Cluster, kind: Kind, backend: str) -> None:
    """The kind's CRD exists and serves the version rendered: a CRD that is installed but does not
    serve it answers 404 to every create, and one that is gone (MXJob on training-operator v1.9,
    which removed MXNet) is "not installed", saying which release to install."""
    try:
        crd = _crd(cluster, kind.crd_name)
    except ApiException as error:
        if error.status != 403:
            raise PreflightError(f"cannot check for {kind.kind}: {api_reason(error)}") from None
        # may not read CRDs (cluster-scoped): listing the kind tells whether it is served
        try:
            request(cluster, "GET", kind.collection(cluster.namespace), [("limit", 1)])
            return
        except ApiException as inner:
            if inner.status != 404:
                return  # it exists; whether we may use it is asked next
        crd = None
    fallback = "native" if backend == "kubeflow" else "kubeflow or native"
    if crd is None:
        raise PreflightError(
            f"{kind.kind} is not installed on this cluster: {kind.crd_hint} or use backend: {fallback}"
        )
    served = [v.get("name") for v in crd.get("spec", {}).get("versions") or [] if v.get("served", True)]
    if kind.version not in served:
        raise PreflightError(
            f"this cluster's {kind.kind} CRD ({kind.crd_name}) does not serve {kind.group}/{kind.version} "
            f"(it serves {', '.join(map(str, served)) or 'no version'}): {kind.crd_hint} or use backend: {fallback}"
        )


def _crd(cluster: Cluster, name: str) -> dict[str, Any] | None:
    """A CRD as JSON; None when it is not installed; ApiException for any other refusal."""
    path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{quote(name, safe='')}"
    try:
        return dict(_call(cluster, "reading a CRD", request, cluster, "GET", path))
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def mpijob_version(cluster: Cluster) -> str:
    """Which MPIJob this cluster serves: "v1" (the Kubeflow training operator's) or "v2beta1"
    (mpi-operator's). Both are the CRD mpijobs.kubeflow.org, so a cluster has one or the other;
    an MPIJob of the other version is refused (404) or, worse, converted by nobody."""
    try:
        crd = _crd(cluster, "mpijobs.kubeflow.org")
    except ApiException as error:
        if error.status == 403:  # may not read CRDs (cluster-scoped): listing each version tells
            for version in ("v1", "v2beta1"):
                try:
                    mpijobs = replace(KINDS["MPIJob"], version=version).collection(cluster.namespace)
                    request(cluster, "GET", mpijobs, [("limit", 1)])
                    return version
                except ApiException as inner:
                    if inner.status != 404:
                        break
        raise PreflightError(
            f"cannot read the MPIJob CRD to tell whether the training operator or mpi-operator serves MPIJobs "
            f"({api_reason(error)}): set PX_K8S_MPIJOB_VERSION (v1: training operator, v2beta1: mpi-operator)"
        ) from None
    if crd is None:
        return "v1"  # not installed: preflight says so, naming the training operator
    served = [v.get("name") for v in crd.get("spec", {}).get("versions") or [] if v.get("served", True)]
    if "v1" in served:
        return "v1"
    if "v2beta1" in served:
        return "v2beta1"
    raise PreflightError(
        f"this cluster serves MPIJob as {', '.join(map(str, served)) or 'no version'}, which jupyter-px does not "
        "know (kubeflow.org/v1 from the training operator, v2beta1 from mpi-operator)"
    )


#: The field that carries per-job pod changes, by Trainer release (kubeflow/trainer
#: pkg/apis/trainer/v1alpha1/trainjob_types.go TrainJobSpec at v2.0.0, v2.1.0, v2.2.0).
TRAINER_PATCH_FIELDS = {"runtimePatches": "v2.2", "podTemplateOverrides": "v2.1", "podSpecOverrides": "v2.0"}


def trainer_version(cluster: Cluster) -> str:
    """Which TrainJob API this cluster serves ("v2.2": runtimePatches, v2.2 and later; "v2.1":
    podTemplateOverrides; "v2.0": podSpecOverrides), read from the TrainJob CRD's schema: the API
    server prunes a field its CRD does not have, silently, so guessing wrong loses our pod changes."""
    try:
        crd = _crd(cluster, "trainjobs.trainer.kubeflow.org")
    except ApiException as error:
        raise PreflightError(
            f"cannot read the TrainJob CRD to tell which Kubeflow Trainer version this cluster runs "
            f"({api_reason(error)}): set PX_K8S_TRAINER_VERSION (v2.2 for Trainer v2.2 and later, v2.1)"
        ) from None
    if crd is None:
        raise PreflightError(
            f"TrainJob is not installed on this cluster: {KINDS['TrainJob'].crd_hint} or use backend: "
            "kubeflow or native"
        )
    fields: set[str] = set()
    for version in crd.get("spec", {}).get("versions") or []:
        if version.get("name") == "v1alpha1" and version.get("served", True):
            schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
            fields = set(((schema.get("properties") or {}).get("spec") or {}).get("properties") or {})
    for field_name, release in TRAINER_PATCH_FIELDS.items():
        if field_name in fields:
            return release
    if not fields:  # a CRD without a structural schema for spec prunes nothing: the newest API
        return "v2.2"
    raise PreflightError(
        "this cluster's TrainJob (trainer.kubeflow.org/v1alpha1) has none of runtimePatches, podTemplateOverrides "
        "or podSpecOverrides: a Kubeflow Trainer version jupyter-px does not know; set PX_K8S_TRAINER_VERSION "
        "(v2.2 or v2.1) if you know which API it matches"
    )


def check_runtime(cluster: Cluster, name: str) -> None:
    try:
        request(cluster, "GET", f"/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/{quote(name, safe='')}")
    except ApiException as error:
        if error.status == 404:
            raise PreflightError(
                f"the Trainer v2 runtime {name!r} (ClusterTrainingRuntime) does not exist on this cluster: install "
                "Kubeflow Trainer's runtimes or set PX_K8S_TRAINER_RUNTIME"
            ) from None
        if error.status != 403:
            raise PreflightError(f"cannot check the runtime {name!r}: {api_reason(error)}") from None


def preflight(cluster: Cluster, objects: list[dict[str, Any]], backend: str, runtime: str | None = None) -> None:
    """Every check, cheapest first; PreflightError with one line at the first problem."""
    check_reachable(cluster)
    check_namespace(cluster)
    kinds = list({obj["kind"]: kind_of(obj) for obj in objects}.values())  # at the version rendered
    for kind in kinds:
        if not kind.core:
            check_installed(cluster, kind, backend)
    check_allowed(cluster, required_access(kinds))
    if runtime:
        check_runtime(cluster, runtime)
