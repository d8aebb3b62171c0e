"""Topology + code -> the manifests of a run, for any of the three Kubernetes backends.

Pure (no cluster, no files written): `jupyter px render` prints these, `submit` creates them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import yaml

from ...topology import Topology, to_dict
from ..base import BackendError
from . import manifests_kubeflow, manifests_native, manifests_trainer
from .names import base_name
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
    payload = build_payload(pod_record_json(run_id, topology, code), code_files)
    ctx = RenderContext(
        run_id=run_id,
        base=base_name(run_id),
        namespace=namespace or settings.namespace or "default",
        topology=topology,
        settings=settings,
        payload=payload,
    )
    return renderer(ctx)


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the code in the ConfigMap) as readable `|` blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def to_yaml(objects: list[dict[str, Any]]) -> str:
    """A `---`-separated multi-document YAML that `kubectl apply -f -` accepts."""
    return yaml.dump_all(objects, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)
