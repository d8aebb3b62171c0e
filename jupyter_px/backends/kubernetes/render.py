"""The manifests of a run for a Kubernetes backend named by the user, and their YAML.

`jupyter px render` and the sidebar's dry run name a backend, not a backend object: this picks
the flavour (`native/`, `kubeflow/`, `trainer/` each name their render functions) and renders
through `run_objects.py`, as `submit` does. Pure (no cluster, no files written). The YAML
(`to_yaml`) starts with a comment that says how to apply it and how to delete every object of
the run by its label; `apply_warnings` names objects too large for client-side apply.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from ...topology import Topology
from ..base import BackendError
from .kubeflow.manifests import FLAVOUR as KUBEFLOW
from .native.manifests import FLAVOUR as NATIVE
from .shared.names import LABEL_RUN
from .shared.run_objects import Flavour, run_objects
from .shared.settings import KubernetesSettings
from .trainer.manifests import FLAVOUR as TRAINER

#: Backend name -> its flavour's render functions.
FLAVOURS: dict[str, Flavour] = {f.name: f for f in (NATIVE, KUBEFLOW, TRAINER)}
BACKEND_NAMES = tuple(FLAVOURS)


def render_manifests(
    backend: str,
    topology: Topology,
    run_id: str,
    code: dict[str, Any],
    code_files: dict[str, bytes],
    settings: KubernetesSettings,
    namespace: str | None = None,
) -> list[dict[str, Any]]:
    """Every object of the run as backend `backend` renders it, the ConfigMap (the owner) first."""
    flavour = FLAVOURS.get(backend)
    if flavour is None:
        raise BackendError(f"backend {backend!r} is not a Kubernetes backend (choose {', '.join(BACKEND_NAMES)})")
    return run_objects(flavour, topology, run_id, code, code_files, settings, namespace)


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
