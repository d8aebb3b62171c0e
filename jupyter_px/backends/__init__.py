"""Backends: where replicas run. `get_backend(name)` picks one by the topology's `backend`."""

from __future__ import annotations

from ..runstore import RunStore
from .base import Backend, BackendError, Observation, ResourceUnavailable, SubmitHandle


def get_backend(name: str, store: RunStore | None = None) -> Backend:
    if name in ("local", None, ""):
        from .local import LocalBackend

        return LocalBackend(store)
    if name in ("kubernetes", "native"):
        from .kubernetes import KubernetesBackend

        return KubernetesBackend(store)
    if name == "kubeflow":
        from .kubernetes import KubeflowBackend

        return KubeflowBackend(store)
    if name == "kubeflow-trainer":
        from .kubernetes import KubeflowTrainerBackend

        return KubeflowTrainerBackend(store)
    raise BackendError(f"unknown backend {name!r}: use local, native, kubeflow or kubeflow-trainer")


__all__ = ["Backend", "BackendError", "Observation", "ResourceUnavailable", "SubmitHandle", "get_backend"]
