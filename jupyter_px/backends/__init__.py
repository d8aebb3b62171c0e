"""Backends: where replicas run. `get_backend(name)` gives the one the backend table names.

Which backends exist, their other names and their families are rows of
`jupyter_px.backend_table`; each implementation lives in a folder of its own here, imported
when it is first used (a local run never imports the Kubernetes client).

Beside the folders, what backends share: `base.py` (the interface), `outcome.py` (how replicas
decide a run), and for the backends whose runs are owned by a detached follower (Kubernetes,
Slurm; a fifth such as PBS or a cloud batch service would be one too) `followed.py` (owner,
observe, reconcile, the stop request), `follower_process.py` (the follower's life as a process)
and `settings_file.py` (a family's settings from a YAML file, then `PX_<FAMILY>_*` variables).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import backend_table
from ..runstore import RunStore
from .base import Backend, BackendError, Observation, ResourceUnavailable, RunLeftBehind, SubmitHandle

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


def get_backend(
    name: str | None, store: RunStore | None = None, kubernetes: Mapping[str, Any] | None = None
) -> Backend:
    """The backend called `name` (or one of its aliases); BackendError for an unknown name.

    `kubernetes`: settings that win over the Kubernetes settings file and `PX_K8S_*` for the
    backends of the Kubernetes family (e.g. the namespace a Jupyter server is configured with)."""
    try:
        entry = backend_table.entry(name)
    except backend_table.UnknownBackend as error:
        raise BackendError(str(error)) from None
    module, _, cls_name = entry.implementation.partition(":")
    cls = getattr(importlib.import_module(module), cls_name)
    if entry.family == "kubernetes":
        from .kubernetes.settings import load_settings

        return cls(store, settings=load_settings(**kubernetes) if kubernetes else None)
    return cls(store)


__all__ = [
    "Backend",
    "BackendError",
    "RunLeftBehind",
    "Observation",
    "ResourceUnavailable",
    "SubmitHandle",
    "backend_name",
    "get_backend",
    "host_followers",
]
