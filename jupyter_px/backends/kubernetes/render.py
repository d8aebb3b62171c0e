"""Topology + code -> the manifests of a run, for any of the three Kubernetes backends.

Pure (no cluster, no files written): `jupyter px render` prints these, `submit` creates them.
Every replica's address goes once into the run's ConfigMap (`cluster_file.py`), not into each pod.
The YAML (`to_yaml`) starts with a comment that says how to apply it and how to delete every
object of the run by its label; `apply_warnings` names objects too large for client-side apply.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import yaml

from ...topology import Topology, to_dict
from ..base import BackendError
from . import manifests_kubeflow, manifests_native, manifests_trainer
from .cluster_file import cluster_json, describe
from .names import LABEL_RUN, base_name
from .payload import WORK_DIR, build_payload
from .podspec import RenderContext
from .settings import KubernetesSettings

#: Backend name -> render function.
RENDERERS: dict[str, Callable[[RenderContext], list[dict[str, Any]]]] = {
    "native": manifests_native.render,
    "kubeflow": manifests_kubeflow.render,
    "kubeflow-trainer": manifests_trainer.render,
}
BACKEND_NAMES = ("native", "kubeflow", "kubeflow-trainer")

#: Backend name -> (topology, base, namespace) -> every replica's address and the pods' contract.
CLUSTERS: dict[str, Callable[[Topology, str, str], tuple[dict[str, list[str]], str]]] = {
    "native": manifests_native.cluster,
    "kubeflow": manifests_kubeflow.cluster,
    "kubeflow-trainer": manifests_trainer.cluster,
}


def pod_record_json(run_id: str, topology: Topology, code: dict[str, Any]) -> str:
    """The run record as the pods see it: the runner reads topology, code and workdir from it."""
    record = {"run_id": run_id, "topology": to_dict(topology), "code": code, "workdir": WORK_DIR}
    return json.dumps(record, indent=1, sort_keys=True)


def render_manifests(
    backend: str,
    topology: Topology,
    run_id: str,
    code: dict[str, Any],
    code_files: dict[str, bytes],
    settings: KubernetesSettings,
    namespace: str | None = None,
) -> list[dict[str, Any]]:
    """Every object of the run, the ConfigMap (the owner) first."""
    renderer = RENDERERS.get(backend)
    if renderer is None:
        raise BackendError(f"backend {backend!r} is not a Kubernetes backend (choose {', '.join(BACKEND_NAMES)})")
    base = base_name(run_id)
    namespace = namespace or settings.namespace or "default"
    # every replica's address, once, in the ConfigMap (`cluster_file.py`): the pods build their
    # environment from it, so no pod carries the others' addresses
    addresses, contract = CLUSTERS[backend](topology, base, namespace)
    description = cluster_json(describe(topology, run_id, addresses, contract))
    payload = build_payload(pod_record_json(run_id, topology, code), code_files, description)
    ctx = RenderContext(
        run_id=run_id,
        base=base,
        namespace=namespace,
        topology=topology,
        settings=settings,
        payload=payload,
    )
    return renderer(ctx)


_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"


class _Dumper(yaml.CSafeDumper):
    """libyaml's emitter (a 10,000-pod run is tens of MB of YAML); multi-line strings (the code
    in the ConfigMap) as readable `|` blocks.

    The manifests are plain dicts, lists and strings, mostly the same strings pod after pod, so
    two costs of the generic representer are cut: strings, dicts and lists become nodes directly
    (no anchor bookkeeping: a manifest never needs `&id001` aliases), and the resolver's answer
    for a scalar (does `'1'` need quotes?) is remembered per distinct string."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._resolved: dict[tuple[bool, bool], dict[str, str]] = {}

    def represent_data(self, data: Any) -> yaml.Node:
        kind = type(data)
        if kind is str:
            return yaml.ScalarNode(_STR, data, style="|" if "\n" in data else None)
        if kind is dict:
            pairs = [(self.represent_data(k), self.represent_data(v)) for k, v in data.items()]
            return yaml.MappingNode(_MAP, pairs, flow_style=False)
        if kind is list:
            return yaml.SequenceNode(_SEQ, [self.represent_data(item) for item in data], flow_style=False)
        return super().represent_data(data)

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is not yaml.ScalarNode:
            return super().resolve(kind, value, implicit)
        known = self._resolved.setdefault(implicit, {})
        tag = known.get(value)
        if tag is None:
            tag = known[value] = super().resolve(kind, value, implicit)
        return tag


#: kubectl's client-side apply stores the whole object as JSON in the
#: `kubectl.kubernetes.io/last-applied-configuration` annotation, and the API server refuses
#: annotations over 256 KiB in all (apimachinery `ValidateAnnotationsSize`, TotalAnnotationSizeLimitB).
LAST_APPLIED_LIMIT = 262_144


def _ref(obj: dict[str, Any]) -> str:
    return f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"


def apply_warnings(objects: list[dict[str, Any]]) -> list[str]:
    """One line per object too large for `kubectl apply` without `--server-side`."""
    out = []
    for obj in objects:
        size = len(json.dumps(obj, separators=(",", ":")))
        if size > LAST_APPLIED_LIMIT:
            out.append(
                f"{_ref(obj)} is {size:,} bytes: over the {LAST_APPLIED_LIMIT:,} bytes kubectl's client-side apply "
                "can keep in its last-applied-configuration annotation, so `kubectl apply -f -` will fail on it; "
                "use `kubectl apply --server-side -f -`"
            )
    return out


def header(objects: list[dict[str, Any]]) -> str:
    """The comment above the YAML: what it is, and how to apply and delete it by the run's label."""
    if not objects:
        return ""
    meta = objects[0].get("metadata", {})
    namespace, run = meta.get("namespace", "default"), meta.get("labels", {}).get(LABEL_RUN, "")
    kinds = ",".join(dict.fromkeys(str(o.get("kind", "")).lower() for o in objects))
    server_side = " --server-side" if apply_warnings(objects) else ""
    return (
        f"# jupyter-px run {run!r}: {len(objects)} objects in namespace {namespace}, each labelled {LABEL_RUN}={run}\n"
        f"# apply:  kubectl apply{server_side} -f FILE\n"
        f"# delete: kubectl delete -n {namespace} {kinds} -l {LABEL_RUN}={run}\n"
    )


def to_yaml(objects: list[dict[str, Any]]) -> str:
    """A `---`-separated multi-document YAML that `kubectl apply -f -` accepts, under a comment
    that says how to apply and delete it."""
    body = yaml.dump_all(objects, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)
    return header(objects) + body
