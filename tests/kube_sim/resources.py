"""The resource types the simulated API server serves: the core kinds the backends and the
simulated controllers use, and custom resources registered from CustomResourceDefinitions (the
Kubeflow ones in `tests/data/crds/`, or any posted to the server)."""

from __future__ import annotations

import functools
import gzip
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .clone import clone

CRD_DIR = Path(__file__).resolve().parent.parent / "data" / "crds"


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    #: metadata.name rule (schema.name_errors): subdomain, label, dns1035
    name_rule: str = "subdomain"
    #: whether writes to the main resource leave `status` alone (the status subresource)
    status_subresource: bool = False
    #: a custom resource's structural schema (None for built-in kinds)
    schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    #: discovery's shortNames and categories (`kubectl get po`, `kubectl get all`)
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    #: a custom resource's additionalPrinterColumns (the columns of its Table)
    printer_columns: tuple[dict[str, Any], ...] = field(default=(), compare=False, hash=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        return f"{self.group}/{self.plural}"


#: Built-in kinds. Name rules: kubernetes v1.33.0 pkg/apis/core/validation/validation.go
#: (ValidatePodName: subdomain; ValidateServiceName: DNS-1035 label; namespaces: RFC 1123 label).
#: Short names and categories: each registry's ShortNames() / Categories() (pkg/registry/core/
#: {pod,service,configmap,serviceaccount,event,resourcequota,namespace,node}/storage/storage.go,
#: pkg/registry/batch/job/storage/storage.go; apiextensions-apiserver pkg/registry/
#: customresourcedefinition/etcd.go: `crd`, `crds`, category `api-extensions`).
BUILTIN = (
    Resource("", "v1", "pods", "Pod", status_subresource=True, short_names=("po",), categories=("all",)),
    Resource(
        "",
        "v1",
        "services",
        "Service",
        name_rule="dns1035",
        status_subresource=True,
        short_names=("svc",),
        categories=("all",),
    ),  # fmt: skip
    Resource("", "v1", "configmaps", "ConfigMap", short_names=("cm",)),
    Resource("", "v1", "secrets", "Secret"),
    Resource("", "v1", "serviceaccounts", "ServiceAccount", short_names=("sa",)),
    Resource("", "v1", "events", "Event", short_names=("ev",)),
    Resource("", "v1", "resourcequotas", "ResourceQuota", status_subresource=True, short_names=("quota",)),
    Resource(
        "",
        "v1",
        "namespaces",
        "Namespace",
        namespaced=False,
        name_rule="label",
        status_subresource=True,
        short_names=("ns",),
    ),  # fmt: skip
    Resource("", "v1", "nodes", "Node", namespaced=False, status_subresource=True, short_names=("no",)),
    Resource("events.k8s.io", "v1", "events", "Event", short_names=("ev",)),
    Resource("batch", "v1", "jobs", "Job", status_subresource=True, categories=("all",)),
    Resource("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
    Resource(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        namespaced=False,
        short_names=("crd", "crds"),
        categories=("api-extensions",),
    ),  # fmt: skip
)


def from_crd(crd: dict[str, Any]) -> list[Resource]:
    """The served versions of a CRD, each with its structural schema."""
    spec = crd["spec"]
    out = []
    for version in spec["versions"]:
        if not version.get("served", True):
            continue
        out.append(
            Resource(
                spec["group"],
                version["name"],
                spec["names"]["plural"],
                spec["names"]["kind"],
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                status_subresource="status" in (version.get("subresources") or {}),
                schema=version["schema"]["openAPIV3Schema"],
                short_names=tuple(spec["names"].get("shortNames") or ()),
                categories=tuple(spec["names"].get("categories") or ()),
                printer_columns=tuple(version.get("additionalPrinterColumns") or ()),
            )
        )
    return out


def load_crd(path: Path) -> dict[str, Any]:
    """A CRD from a YAML file (gzip when it ends in .gz); parsed once per process."""
    return clone(_load_crd(path))


@functools.cache
def _load_crd(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(data, Loader=loader)


def kubeflow_crds() -> list[Path]:
    return sorted(CRD_DIR.glob("*.yaml.gz"))


#: Trainer releases whose TrainJob CRD differs from the v2.3.0 copy in tests/data/crds/: v2.1.0
#: (`podTemplateOverrides`, no `runtimePatches`; kubeflow/trainer v2.1.0
#: manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml).
TRAINJOB_CRDS = {"2.1": CRD_DIR / "trainer-v2.1.0" / "trainer.kubeflow.org_trainjobs.yaml.gz"}


#: mpi-operator's MPIJob CRD (kubeflow/mpi-operator v0.6.0 manifests/base/kubeflow.org_mpijobs.yaml):
#: kubeflow.org/v2beta1 under the same name as the training operator's v1 one.
MPI_OPERATOR_CRD = CRD_DIR / "mpi-operator-v0.6.0" / "kubeflow.org_mpijobs.yaml.gz"


def trainer_version(text: str) -> tuple[int, int]:
    """'2.1', 'v2.3.0' -> (2, 1), (2, 3): the Trainer release a simulated cluster runs."""
    major, minor, *_ = text.lstrip("v").split(".")
    return int(major), int(minor)


def trainjob_crd(version: str) -> Path | None:
    """The TrainJob CRD of that Trainer release, where it is not the default copy's (v2.2+)."""
    major, minor = trainer_version(version)
    return TRAINJOB_CRDS.get(f"{major}.{minor}")


def training_runtimes() -> list[Path]:
    """The Trainer v2 ClusterTrainingRuntimes in tests/data/crds/ (torch, deepspeed, jax)."""
    return sorted(CRD_DIR.glob("*_distributed.yaml"))
