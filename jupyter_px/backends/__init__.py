"""Backends: where replicas run. `get_backend(name)` gives the one the backend table names.

Which backends exist, their other names and their families are rows of
`jupyter_px.backend_table`; each implementation lives in a folder of its own here, imported
when it is first used (a local run never imports the Kubernetes client).

Beside the folders, what backends share: `base.py` (the interface), `outcome.py` (how replicas
decide a run), and for the backends whose runs are owned by a detached follower (Kubernetes,
Slurm, SSH; another such as PBS or a cloud batch service would be one too) `followed.py` (owner,
observe, reconcile, the stop request), `follower_process.py` (the follower's life as a process)
and `settings_file.py` (a family's settings from a YAML file, then `PX_<FAMILY>_*` variables).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import backend_table
from ..runstore import RunStore
from .base import Backend, BackendError, Observation, Rendered, ResourceUnavailable, RunLeftBehind, SubmitHandle

if TYPE_CHECKING:
    from .kubernetes.follower.host import FollowerHost


def backend_name(name: str | None) -> str:
    """A backend's one name (`kubernetes`, what older versions stored, is `native`)."""
    return backend_table.canonical(name)


def host_followers(store: RunStore) -> FollowerHost | None:
    """Follow, in this process, the runs of `store` whose backend can share one watch per
    namespace (Kubernetes): what a Jupyter server does while it runs (its keeper hands it the
    runs; `close()` hands them back to followers of their own). None when this process hosts
    that store's followers already."""
    from .kubernetes.follower.host import FollowerHost

    return FollowerHost.open(store)


def named(path: str) -> Any:
    """What a backend row's `module:name` names, imported now."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


def row(name: str | None) -> backend_table.BackendEntry:
    """The backend table's row of `name` (an alias included); BackendError for an unknown name."""
    try:
        return backend_table.entry(name)
    except backend_table.UnknownBackend as error:
        raise BackendError(str(error)) from None


def get_backend(
    name: str | None, store: RunStore | None = None, kubernetes: Mapping[str, Any] | None = None
) -> Backend:
    """The backend called `name` (or one of its aliases); BackendError for an unknown name.

    `kubernetes`: a Jupyter server's overrides (its configured namespace and image), which win
    over the settings file and variables of a backend whose row takes them (`server_settings`)."""
    entry = row(name)
    cls = named(entry.implementation)
    if entry.server_settings and kubernetes:
        return cls(store, settings=named(entry.server_settings)(**kubernetes))
    return cls(store)


def render(topology: Any, code: Any, *, name: str, backend: str | None, **options: Any) -> Rendered:
    """What a submit of `code` (a loaded code source, or None) would create on `backend` (else
    the topology's), by that backend's row (`render`). Pure: nothing is
    contacted or written. BackendError when the backend renders nothing or cannot express it."""
    entry = row(backend or topology.backend_kind)
    if entry.render is None:
        renderers = ", ".join(e.name for e in backend_table.BACKENDS if e.renders)
        raise BackendError(f"backend {entry.name!r} renders nothing: choose one of {renderers}")
    return named(entry.render)(topology, code, name=name, backend=entry.name, **options)


__all__ = [
    "Backend",
    "BackendError",
    "RunLeftBehind",
    "Observation",
    "Rendered",
    "ResourceUnavailable",
    "SubmitHandle",
    "backend_name",
    "get_backend",
    "host_followers",
    "named",
    "render",
    "row",
]
