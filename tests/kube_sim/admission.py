"""Admission plug-ins the simulated API server runs on pod creation.

Pod Security admission, after kubernetes v1.33.0 staging/src/k8s.io/pod-security-admission
(admission/admission.go: the namespace's `pod-security.kubernetes.io/enforce` level, message
`violates PodSecurity "<level>:<version>": <check> (<detail>), ...`; policy/check_*.go: the checks
and their wording). The baseline checks below (privileged, host namespaces, hostPath volumes,
hostPorts) and the restricted ones (allowPrivilegeEscalation, capabilities, runAsNonRoot,
seccompProfile); restricted includes baseline.

ResourceQuota, after plugin/pkg/admission/resourcequota/controller.go and
pkg/quota/v1/evaluator/core/pods.go: a pod counts against every quota in its namespace; over a
hard limit it is refused `exceeded quota: <name>, requested: <r>, used: <u>, limited: <l>`;
a quota on cpu/memory requires every container to say it (`must specify ...`). The quota's
`status.used` is updated as the pod is admitted.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from . import errors, quantity
from .schema import DNS1123_SUBDOMAIN, SUBDOMAIN_MSG

if TYPE_CHECKING:
    from .apiserver import ApiServer
    from .resources import Resource

LEVELS = ("privileged", "baseline", "restricted")


def _names(kind: str, names: list[str]) -> str:
    # check_*.go: `container "a"` or `containers "a", "b"`
    quoted = ", ".join(f'"{n}"' for n in names)
    return f"{kind}{'s' if len(names) > 1 else ''} {quoted}"


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return (spec.get("initContainers") or []) + (spec.get("containers") or [])


def pod_security_violations(pod: dict[str, Any], level: str) -> list[str]:
    spec = pod.get("spec") or {}
    pod_context = spec.get("securityContext") or {}
    out: list[str] = []
    if level in ("baseline", "restricted"):
        privileged = [c["name"] for c in _containers(spec) if (c.get("securityContext") or {}).get("privileged")]
        if privileged:  # check_privileged.go
            out.append(f"privileged ({_names('container', privileged)} must not set securityContext.privileged=true)")
        hosts = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k)]
        if hosts:  # check_hostNamespaces.go
            out.append(f"host namespaces ({', '.join(hosts)})")
        paths = [v["name"] for v in spec.get("volumes") or [] if "hostPath" in v]
        if paths:  # check_hostPathVolumes.go
            out.append(f"hostPath volumes ({_names('volume', paths)})")
        ports = [c["name"] for c in _containers(spec) if any(p.get("hostPort") for p in c.get("ports") or [])]
        if ports:  # check_hostPorts.go
            out.append(f"hostPort ({_names('container', ports)} uses hostPorts)")
    if level == "restricted":
        escalation = [
            c["name"]
            for c in _containers(spec)
            if (c.get("securityContext") or {}).get("allowPrivilegeEscalation") is not False
        ]
        if escalation:  # check_allowPrivilegeEscalation.go
            out.append(
                f"allowPrivilegeEscalation != false ({_names('container', escalation)} must set "
                "securityContext.allowPrivilegeEscalation=false)"
            )
        undropped = [
            c["name"] for c in _containers(spec)
            if "ALL" not in (((c.get("securityContext") or {}).get("capabilities") or {}).get("drop") or [])
        ]  # fmt: skip
        if undropped:  # check_capabilities_restricted.go
            out.append(
                f"unrestricted capabilities ({_names('container', undropped)} must set "
                'securityContext.capabilities.drop=["ALL"])'
            )
        root = [
            c["name"] for c in _containers(spec)
            if (c.get("securityContext") or {}).get("runAsNonRoot", pod_context.get("runAsNonRoot")) is not True
        ]  # fmt: skip
        if root:  # check_runAsNonRoot.go
            out.append(
                f"runAsNonRoot != true (pod or {_names('container', root)} must set securityContext.runAsNonRoot=true)"
            )
        pod_seccomp = (pod_context.get("seccompProfile") or {}).get("type")
        unconfined = [
            c["name"] for c in _containers(spec)
            if ((c.get("securityContext") or {}).get("seccompProfile") or {}).get("type", pod_seccomp)
            not in ("RuntimeDefault", "Localhost")
        ]  # fmt: skip
        if unconfined:  # check_seccompProfile_restricted.go
            out.append(
                f"seccompProfile (pod or {_names('container', unconfined)} must set "
                'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'
            )
    return out


def _format(name: str, value: Decimal) -> str:
    """resource.Quantity's canonical form, as far as the messages need it."""
    if "memory" in name or "storage" in name:
        for suffix, size in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if value >= size and value % size == 0:
                return f"{int(value / size)}{suffix}"
        return str(int(value))
    if value == value.to_integral_value():
        return str(int(value))
    return f"{int(value * 1000)}m"


def pod_usage(pod: dict[str, Any]) -> dict[str, Decimal]:
    """pkg/quota/v1/evaluator/core/pods.go PodUsageFunc: pods, requests.* and limits.* (cpu and
    memory also under their bare names, which mean requests)."""
    usage: dict[str, Decimal] = {"pods": Decimal(1), "count/pods": Decimal(1)}
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        for kind in ("requests", "limits"):
            for name, value in (resources.get(kind) or {}).items():
                key = f"{kind}.{name}"
                usage[key] = usage.get(key, Decimal(0)) + quantity.parse(value)
                if kind == "requests" and name in ("cpu", "memory"):
                    usage[name] = usage.get(name, Decimal(0)) + quantity.parse(value)
    return usage


class Admission:
    """Both plug-ins, registered on an ApiServer (`Admission(api).install()`)."""

    def __init__(self, api: ApiServer):
        self.api = api

    def install(self) -> None:
        self.api.admission.append(self)

    def __call__(self, operation: str, resource: Resource, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if resource.plural != "pods" or operation != "CREATE":
            return
        namespace = obj["metadata"].get("namespace") or ""
        name = obj["metadata"].get("name", "")
        ns = self.api.try_get(self.api.resource("", "v1", "namespaces"), "", namespace) or {"metadata": {}}
        labels = ns["metadata"].get("labels") or {}
        level = labels.get("pod-security.kubernetes.io/enforce", "privileged")
        version = labels.get("pod-security.kubernetes.io/enforce-version", "latest")
        if level in LEVELS:
            violations = pod_security_violations(obj, level)
            if violations:
                raise errors.forbidden(
                    "pods", "", name, f'violates PodSecurity "{level}:{version}": ' + ", ".join(violations)
                )
        self._quota(namespace, name, obj)

    def _quota(self, namespace: str, name: str, pod: dict[str, Any]) -> None:
        quotas = self.api.resource("", "v1", "resourcequotas")
        pods = self.api.resource("", "v1", "pods")
        wanted = pod_usage(pod)
        for quota in self.api.list(quotas, namespace)["items"]:
            hard = {k: quantity.parse(v) for k, v in ((quota.get("spec") or {}).get("hard") or {}).items()}
            if not hard:
                continue
            missing = []
            for key in sorted(hard):
                base = key.split(".", 1)[-1] if key.startswith(("requests.", "limits.")) else key
                kind = "limits" if key.startswith("limits.") else "requests"
                if base in ("cpu", "memory"):
                    lacking = [
                        c["name"]
                        for c in pod["spec"].get("containers") or []
                        if base not in ((c.get("resources") or {}).get(kind) or {})
                    ]
                    if lacking:
                        missing.append(f"{kind}.{base} for: {','.join(lacking)}")
            if missing:
                raise errors.forbidden(
                    "pods", "", name, f"failed quota: {quota['metadata']['name']}: must specify " + "; ".join(missing)
                )
            used: dict[str, Decimal] = {}
            for other in self.api.list(pods, namespace)["items"]:
                if (other.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                    continue
                for key, value in pod_usage(other).items():
                    used[key] = used.get(key, Decimal(0)) + value
            over = [
                k
                for k in sorted(hard)
                if used.get(k, Decimal(0)) + wanted.get(k, Decimal(0)) > hard[k] and wanted.get(k)
            ]
            if over:

                def show(values: dict[str, Decimal], over: list[str] = over) -> str:
                    return ",".join(f"{k}={_format(k, values.get(k, Decimal(0)))}" for k in over)

                raise errors.forbidden(
                    "pods",
                    "",
                    name,
                    f"exceeded quota: {quota['metadata']['name']}, requested: {show(wanted)}, "
                    f"used: {show(used)}, limited: {show(hard)}",
                )
            total = {k: _format(k, used.get(k, Decimal(0)) + wanted.get(k, Decimal(0))) for k in hard}
            try:
                self.api.update(
                    quotas,
                    {
                        "metadata": {"name": quota["metadata"]["name"]},
                        "status": {"hard": quota["spec"]["hard"], "used": total},
                    },
                    namespace,
                    "status",
                )
            except errors.ApiError:
                pass


# ---- Kubeflow Trainer v2's validating webhook ---------------------------------------------------

#: kubeflow/trainer v2.3.0 pkg/webhooks/trainjob_webhook.go: the webhook's name (kubebuilder marker)
TRAINJOB_WEBHOOK = "validator.trainjob.trainer.kubeflow.org"
#: pkg/constants/constants.go TorchRunReservedEnvNames
TORCH_RESERVED = ("PET_MASTER_ADDR", "PET_MASTER_PORT", "PET_NNODES", "PET_NODE_RANK", "PET_NPROC_PER_NODE")
#: kubeflow/trainer v2.3.0 pkg/constants MPIReservedEnvNames (checked from v2.3.0 on, mpi.go Validate)
MPI_RESERVED = (
    "OMPI_MCA_orte_default_hostfile",
    "OMPI_MCA_plm_rsh_args",
    "OMPI_MCA_orte_keep_fqdn_hostnames",
    "OMPI_MCA_orte_set_default_slots",
)
_HTTP_PATH = re.compile(r"^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$")


def domain_prefixed_path_errors(path: str, value: str) -> list[errors.FieldError]:
    """apimachinery util/validation IsDomainPrefixedPath."""
    if not value:
        return [errors.required(path)]
    host, _, rest = value.partition("/")
    if "/" not in value or not host or not rest:
        return [errors.invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    out = []
    if not DNS1123_SUBDOMAIN.match(host) or len(host) > 253:
        out.append(errors.invalid(path, host, SUBDOMAIN_MSG))
    if not _HTTP_PATH.match(rest):
        out.append(
            errors.invalid(path, rest, "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')")
        )
    return out


class TrainJobWebhook:
    """kubeflow/trainer v2.3.0 TrainJob validation (pkg/webhooks/trainjob_webhook.go ->
    pkg/runtime/core/trainingruntime.go ValidateObjects -> the plugins' Validate):
    - jobset.go: each runtime patch's `manager` must be a domain-prefixed path (the error names
      `spec.runtimePatches.manager`, no index); a patched replicated job must exist in the runtime
      (`must not have replicated job that doesn't exist in the runtime job template`), and so must
      its containers and init containers;
    - torch.go: spec.trainer.env must not set torchrun's reserved PET_* variables.
    - mpi.go (v2.3.0): nor, on an MPI runtime, the OMPI_MCA_* variables the MPI plugin sets.
    A denial is what the API server makes of controller-runtime's `admission.Denied`: 403
    Forbidden, `admission webhook "<name>" denied the request: <errors>`
    (staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/errors/statuserror.go)."""

    def __init__(self, api: ApiServer):
        self.api = api

    def install(self) -> None:
        self.api.admission.append(self)

    def __call__(self, operation: str, resource: Resource, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if resource.group != "trainer.kubeflow.org" or resource.plural != "trainjobs":
            return
        spec = obj.get("spec") or {}
        ref = spec.get("runtimeRef") or {}
        kind = ref.get("kind") or "ClusterTrainingRuntime"
        if kind not in ("ClusterTrainingRuntime", "TrainingRuntime"):
            self._deny(f"unsupported runtime: {kind}.{ref.get('apiGroup') or 'trainer.kubeflow.org'}")
        runtime = self._runtime(kind, ref.get("name", ""), obj["metadata"].get("namespace", ""))
        jobs: dict[str, set[str]] = {}
        for job in (((runtime or {}).get("spec") or {}).get("template") or {}).get("spec", {}).get(
            "replicatedJobs"
        ) or []:
            pod = ((job.get("template") or {}).get("spec") or {}).get("template", {}).get("spec") or {}
            jobs[job["name"]] = {c["name"] for c in (pod.get("initContainers") or []) + (pod.get("containers") or [])}
        errs: list[errors.FieldError] = []
        if self.api.trainer < (2, 2):
            errs += self._overrides(spec.get("podTemplateOverrides") or [], jobs if runtime is not None else None)
        patches = spec.get("runtimePatches") or []
        for patch in patches:
            errs += domain_prefixed_path_errors("spec.runtimePatches.manager", patch.get("manager") or "")
            template = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}
            if runtime is None:
                continue
            for job in template.get("replicatedJobs") or []:
                if job.get("name") not in jobs:
                    errs.append(
                        errors.invalid(
                            "spec.runtimePatches",
                            patches,
                            "must not have replicated job that doesn't exist in the runtime job template",
                        )
                    )
                    continue
                pod = (((job.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
                for field_name, what in (("initContainers", "initContainer"), ("containers", "container")):
                    for container in pod.get(field_name) or []:
                        if container.get("name") not in jobs[job["name"]]:
                            errs.append(
                                errors.invalid(
                                    "spec.runtimePatches",
                                    patches,
                                    f"must not have {what} that doesn't exist in the runtime job {job['name']}",
                                )
                            )
        torch = (((runtime or {}).get("spec") or {}).get("mlPolicy") or {}).get("torch") is not None
        env = (spec.get("trainer") or {}).get("env") or []
        reserved = sorted({e.get("name") for e in env} & set(TORCH_RESERVED))
        if torch and reserved:
            errs.append(
                errors.invalid(
                    "spec.trainer.env",
                    env,
                    f"must not have reserved envs, invalid envs configured: [{' '.join(reserved)}]",
                )
            )
        mpi = (((runtime or {}).get("spec") or {}).get("mlPolicy") or {}).get("mpi") is not None
        reserved = sorted({e.get("name") for e in env} & set(MPI_RESERVED))
        if mpi and reserved and self.api.trainer >= (2, 3):
            errs.append(
                errors.invalid(
                    "spec.trainer.env",
                    env,
                    f"must not have reserved envs, invalid envs configured: [{' '.join(reserved)}]",
                )
            )
        if errs:
            aggregate = str(errs[0]) if len(errs) == 1 else "[" + ", ".join(str(e) for e in errs) + "]"
            self._deny(aggregate)

    @staticmethod
    def _overrides(overrides: list[dict[str, Any]], jobs: dict[str, set[str]] | None) -> list[errors.FieldError]:
        """Trainer v2.1.0 pkg/runtime/framework/plugins/jobset/jobset.go Validate: each target job,
        and each overridden container and init container, must exist in the runtime."""
        out: list[errors.FieldError] = []
        path = "spec.podTemplateOverrides"
        for override in overrides if jobs is not None else []:
            for target in override.get("targetJobs") or []:
                name = target.get("name")
                if name not in jobs:
                    out.append(
                        errors.invalid(
                            path, overrides, "must not have targetJob that doesn't exist in the runtime job template"
                        )
                    )
                    continue
                pod = override.get("spec") or {}
                for field_name, what in (("initContainers", "initContainer"), ("containers", "container")):
                    for container in pod.get(field_name) or []:
                        if container.get("name") not in jobs[name]:
                            message = f"must not have {what} that doesn't exist in the runtime job {name}"
                            out.append(errors.invalid(path, overrides, message))
        return out

    def _runtime(self, kind: str, name: str, namespace: str) -> dict[str, Any] | None:
        plural = "clustertrainingruntimes" if kind == "ClusterTrainingRuntime" else "trainingruntimes"
        try:
            resource = self.api.resource("trainer.kubeflow.org", "v1alpha1", plural)
        except errors.ApiError:
            return None
        return self.api.try_get(resource, namespace, name)

    def _deny(self, message: str) -> None:
        raise errors.ApiError(
            errors.status(403, "Forbidden", f'admission webhook "{TRAINJOB_WEBHOOK}" denied the request: {message}')
        )
