"""Backends: where replicas run. `get_backend(name)` picks one by the topology's `backend`."""

from __future__ import annotations

from ..runstore import RunStore
from .base import Backend, BackendError, Observation, ResourceUnavailable, SubmitHandle


def backend_name(name: str | None) -> str:
    """A backend's one name: `kubernetes` (what older versions stored) is `native`."""
    return "native" if name == "kubernetes" else (name or "local")


def get_backend(name: str | None, store: RunStore | None = None) -> Backend:
    """The backend called `name` (`kubernetes` is accepted as another name for `native`)."""
    name = backend_name(name)
    if name == "local":
        from .local import LocalBackend

        return LocalBackend(store)
    if name == "native":
        from .kubernetes import KubernetesBackend

        return KubernetesBackend(store)
    if name == "kubeflow":
        from .kubernetes import KubeflowBackend

        return KubeflowBackend(store)
    if name == "kubeflow-trainer":
        from .kubernetes import KubeflowTrainerBackend

        return KubeflowTrainerBackend(store)
    raise BackendError(f"unknown backend {name!r}: use local, native, kubeflow or kubeflow-trainer")


__all__ = [
    "Backend",
    "BackendError",
    "Observation",
    "ResourceUnavailable",
    "SubmitHandle",
    "backend_name",
    "get_backend",
]
