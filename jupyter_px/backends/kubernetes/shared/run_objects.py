"""A run's objects from one flavour's render functions, the same way for all three flavours.

Each flavour (`native/`, `kubeflow/`, `trainer/`) has a pure `manifests.py` and names its two
render functions in a `Flavour`: the pod templates and job, and every replica's address. What
they share is done here once: the base name, the cluster description written once into the
ConfigMap (`cluster_file.py`, so no pod carries the others' addresses) and the payload. Pure (no
cluster, no files written): `jupyter px render` prints these, `submit` creates them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ....topology import Topology, to_dict
from .cluster_file import cluster_json, describe
from .names import base_name
from .payload import WORK_DIR, build_payload
from .podspec import RenderContext
from .settings import KubernetesSettings


@dataclass(frozen=True)
class Flavour:
    """One Kubernetes backend's pure half: its name, its objects, its replicas' addresses."""

    name: str  # native, kubeflow, kubeflow-trainer
    #: every object of the run, the ConfigMap (the owner) first
    render: Callable[[RenderContext], list[dict[str, Any]]]
    #: (topology, base, namespace) -> every replica's address and the pods' contract
    cluster: Callable[[Topology, str, str], tuple[dict[str, list[str]], str]]


def pod_record_json(run_id: str, topology: Topology, code: dict[str, Any]) -> str:
    """The run record as the pods see it: the runner reads topology, code and workdir from it."""
    record = {"run_id": run_id, "topology": to_dict(topology), "code": code, "workdir": WORK_DIR}
    return json.dumps(record, indent=1, sort_keys=True)


def run_objects(
    flavour: Flavour,
    topology: Topology,
    run_id: str,
    code: dict[str, Any],
    code_files: dict[str, bytes],
    settings: KubernetesSettings,
    namespace: str | None = None,
    result_key: str | None = None,
) -> list[dict[str, Any]]:
    """Every object of the run as `flavour` renders it, the ConfigMap (the owner) first.
    `result_key`: the run's result secret (`run/result.key` in the pods), none when rendering."""
    base = base_name(run_id)
    namespace = namespace or settings.namespace or "default"
    # every replica's address, once, in the ConfigMap (`cluster_file.py`): the pods build their
    # environment from it, so no pod carries the others' addresses
    addresses, contract = flavour.cluster(topology, base, namespace)
    description = cluster_json(describe(topology, run_id, addresses, contract))
    payload = build_payload(pod_record_json(run_id, topology, code), code_files, description, result_key)
    ctx = RenderContext(
        run_id=run_id,
        base=base,
        namespace=namespace,
        topology=topology,
        settings=settings,
        payload=payload,
    )
    return flavour.render(ctx)
