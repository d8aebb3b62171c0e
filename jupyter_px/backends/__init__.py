"""Backends: where replicas run. `get_backend(name)` picks one by the topology's `backend`."""

from __future__ import annotations

from ..runstore import RunStore
from .base import Backend, BackendError, ResourceUnavailable, SubmitHandle


def get_backend(name: str, store: RunStore | None = None) -> Backend:
    if name in ("local", None, ""):
        from .local import LocalBackend

        return LocalBackend(store)
    raise BackendError(
        f"backend {name!r} is not available in this installation yet; use backend: local "
        "(the Kubernetes and Kubeflow backends are on the way)"
    )


__all__ = ["Backend", "BackendError", "ResourceUnavailable", "SubmitHandle", "get_backend"]
