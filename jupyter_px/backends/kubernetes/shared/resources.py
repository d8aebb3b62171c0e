"""One table of the object kinds the backends create: how to create, read, list and delete each.

The official client has one method per kind (and a generic one for custom resources); create,
rollback, stop and the follower go through this table instead of repeating that dispatch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, cast

from .client import Cluster


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

    def create(self, cluster: Cluster, body: dict[str, Any]) -> dict[str, Any]:
        ns = cluster.namespace
        if self.core:
            method = getattr(cluster.core, f"create_namespaced_{_snake(self.kind)}")
            # Raw JSON: turning 1,000 answers into the client's models costs more than the calls.
            return json.loads(method(ns, body, _preload_content=False).data)
        created = cluster.custom.create_namespaced_custom_object(self.group, self.version, ns, self.plural, body)
        return cast(dict[str, Any], created)

    def get(self, cluster: Cluster, name: str, timeout: Any = None) -> dict[str, Any]:
        """`timeout`: the client's `_request_timeout` (seconds, or (connect, read)); None: none."""
        ns = cluster.namespace
        if self.core:
            method = getattr(cluster.core, f"read_namespaced_{_snake(self.kind)}")
            return json.loads(method(name, ns, _preload_content=False, _request_timeout=timeout).data)
        found = cluster.custom.get_namespaced_custom_object(
            self.group, self.version, ns, self.plural, name, _request_timeout=timeout
        )
        return cast(dict[str, Any], found)

    def delete(self, cluster: Cluster, name: str) -> None:
        ns = cluster.namespace
        if self.core:
            method = getattr(cluster.core, f"delete_namespaced_{_snake(self.kind)}")
            method(name, ns, propagation_policy="Background", _preload_content=False)
        else:
            cluster.custom.delete_namespaced_custom_object(
                self.group, self.version, ns, self.plural, name, propagation_policy="Background", _preload_content=False
            )

    def delete_by_label(self, cluster: Cluster, selector: str) -> None:
        ns = cluster.namespace
        if self.core:
            method = getattr(cluster.core, f"delete_collection_namespaced_{_snake(self.kind)}")
            method(ns, label_selector=selector, propagation_policy="Background", _preload_content=False)
        else:
            cluster.custom.delete_collection_namespaced_custom_object(
                self.group,
                self.version,
                ns,
                self.plural,
                label_selector=selector,
                propagation_policy="Background",
                _preload_content=False,
            )

    def names_by_label(self, cluster: Cluster, selector: str) -> list[str]:
        """Names of the objects of this kind that carry the label and are not being deleted."""
        ns = cluster.namespace
        if self.core:
            method = getattr(cluster.core, f"list_namespaced_{_snake(self.kind)}")
            found = json.loads(method(ns, label_selector=selector, _preload_content=False).data)
        else:
            found = cluster.custom.list_namespaced_custom_object(
                self.group, self.version, ns, self.plural, label_selector=selector
            )
        return [
            item["metadata"]["name"]
            for item in found.get("items") or []
            if not item["metadata"].get("deletionTimestamp")
        ]


def _snake(kind: str) -> str:
    return {"ConfigMap": "config_map", "Service": "service", "Pod": "pod"}[kind]


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
