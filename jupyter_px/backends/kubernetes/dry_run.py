"""The manifests a Kubernetes backend would create for some code: `jupyter px render` and the REST
API's `POST px/api/topology/render` both show them, and both come through here, so a user reading
a dry run in the terminal and in the sidebar reads the same objects. Pure: nothing is contacted.
"""

from __future__ import annotations

from typing import Any

from ...topology import Topology
from ..base import BackendError, Rendered
from .render import BACKEND_NAMES, apply_warnings, render_manifests, to_yaml
from .shared.names import base_name
from .shared.settings import load_settings


def dry_run_backend(topology: Topology, backend: str | None) -> str:
    """The Kubernetes backend to render for: the one asked for, else the topology's."""
    chosen = backend or topology.backend_kind
    if chosen not in BACKEND_NAMES:
        raise BackendError(
            f"backend {chosen!r} creates no Kubernetes objects: choose one of {', '.join(BACKEND_NAMES)}"
        )
    return chosen


def dry_run(
    topology: Topology,
    *,
    name: str,
    entrypoint: str,
    code: bytes,
    backend: str | None = None,
    language: str = "python",
    args: list[str] | None = None,
    namespace: str | None = None,
) -> list[dict[str, Any]]:
    """Every object of a run named `name` (made a valid Kubernetes name), the ConfigMap first."""
    return render_manifests(
        dry_run_backend(topology, backend),
        topology,
        base_name(name),
        {"entrypoint": entrypoint, "language": language, "args": list(args or [])},
        {entrypoint: code},
        load_settings(namespace=namespace),
    )


def rendered(topology: Topology, code: Any, *, name: str, backend: str | None = None, **options: Any) -> Rendered:
    """The backend row's `render`: the objects for `code` (a loaded code source: its entrypoint,
    text and language; None: an empty `main.py`), as YAML, with what applying them needs told."""
    chosen = dry_run_backend(topology, backend)
    objects = dry_run(
        topology,
        name=name,
        entrypoint=code.entrypoint if code else "main.py",
        code=(code.text if code else "").encode(),
        backend=chosen,
        language=code.language if code else "python",
        **options,
    )
    return Rendered(chosen, objects, to_yaml(objects), apply_warnings(objects))
