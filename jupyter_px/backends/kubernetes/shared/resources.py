"""One table of the object kinds the backends create: how to create, read, list and delete each.

Each kind is a REST collection (`/api/v1/namespaces/NS/pods`, `/apis/GROUP/VERSION/namespaces/
NS/PLURAL`), called through `client.request` as JSON: the official client's generated classes
would turn every answer into models (1,000 creates' answers cost more than the calls) and cost a
second of CPU to import. Create, rollback, stop and the follower go through this table.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, cast
from urllib.parse import quote

from .client import Cluster, request

#: How objects are deleted: their dependents in the background (the client's
#: `propagation_policy="Background"`, as kubectl's default cascade).
BACKGROUND = ("propagationPolicy", "Background")


@dataclass(frozen=True)
class Kind:
    kind: str
    plural: str
    group: str = ""  # "" for core/v1
    version: str = "v1"
    crd_hint: str = ""  # what to install when the CRD is missing

    @property
    def core(self) -> bool:
        return not self.group

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"

    def collection(self, namespace: str) -> str:
        """The REST path of this kind's objects in `namespace`."""
        api = f"/api/{self.version}" if self.core else f"/apis/{self.group}/{self.version}"
        return f"{api}/namespaces/{quote(namespace, safe='')}/{self.plural}"

    def _object(self, namespace: str, name: str) -> str:
        return f"{self.collection(namespace)}/{quote(name, safe='')}"

    def create(self, cluster: Cluster, body: dict[str, Any]) -> dict[str, Any]:
        return cast(dict[str, Any], request(cluster, "POST", self.collection(cluster.namespace), body=body))

    def get(self, cluster: Cluster, name: str, read_timeout: float | None = None) -> dict[str, Any]:
        """`read_timeout`: seconds to wait for the answer; None: every call's default."""
        path = self._object(cluster.namespace, name)
        return cast(dict[str, Any], request(cluster, "GET", path, read_timeout=read_timeout))

    def delete(self, cluster: Cluster, name: str) -> None:
        request(cluster, "DELETE", self._object(cluster.namespace, name), [BACKGROUND])

    def delete_by_label(self, cluster: Cluster, selector: str) -> None:
        request(cluster, "DELETE", self.collection(cluster.namespace), [("labelSelector", selector), BACKGROUND])

    def names_by_label(self, cluster: Cluster, selector: str) -> list[str]:
        """Names of the objects of this kind that carry the label and are not being deleted."""
        found = request(cluster, "GET", self.collection(cluster.namespace), [("labelSelector", selector)])
        return [
            item["metadata"]["name"]
            for item in found.get("items") or []
            if not item["metadata"].get("deletionTimestamp")
        ]


_OPERATOR = "install the Kubeflow training operator (kubeflow/training-operator v1.9)"
KINDS: dict[str, Kind] = {
    k.kind: k
    for k in (
        Kind("ConfigMap", "configmaps"),
        Kind("Service", "services"),
        Kind("Pod", "pods"),
        Kind("TFJob", "tfjobs", "kubeflow.org", "v1", _OPERATOR),
        Kind("PyTorchJob", "pytorchjobs", "kubeflow.org", "v1", _OPERATOR),
        Kind(
            "MXJob",
            "mxjobs",
            "kubeflow.org",
            "v1",
            # kubeflow/training-operator v1.9.0 removed MXNet ("Remove support for MXJob (#2150)")
            "training-operator v1.9 and later have no MXJob (MXNet support was removed): install v1.8.1 "
            '(kubectl apply --server-side -k "github.com/kubeflow/training-operator.git/manifests/overlays/'
            'standalone?ref=v1.8.1")',
        ),
        Kind("MPIJob", "mpijobs", "kubeflow.org", "v1", _OPERATOR),
        Kind("TrainJob", "trainjobs", "trainer.kubeflow.org", "v1alpha1", "install Kubeflow Trainer v2"),
    )
}


def kind_of(obj: dict[str, Any]) -> Kind:
    """The kind of an object, at the API version it names (an MPIJob is kubeflow.org/v1 from the
    training operator or kubeflow.org/v2beta1 from mpi-operator)."""
    kind = KINDS[obj["kind"]]
    group, _, version = str(obj.get("apiVersion") or "").rpartition("/")
    if not kind.core and group == kind.group and version and version != kind.version:
        return replace(kind, version=version)
    return kind
