"""Backends: where replicas run. `get_backend(name)` picks one by the topology's `backend`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..runstore import RunStore
from .base import Backend, BackendError, Observation, ResourceUnavailable, RunLeftBehind, SubmitHandle


def backend_name(name: str | None) -> str:
    """A backend's one name: `kubernetes` (what older versions stored) is `native`."""
    return "native" if name == "kubernetes" else (name or "local")


def get_backend(
    name: str | None, store: RunStore | None = None, kubernetes: Mapping[str, Any] | None = None
) -> Backend:
    """The backend called `name` (`kubernetes` is accepted as another name for `native`).

    `kubernetes`: settings that win over the Kubernetes settings file and `PX_K8S_*` for the
    Kubernetes backends (e.g. the namespace a Jupyter server is configured with)."""
    name = backend_name(name)
    if name in ("native", "kubeflow", "kubeflow-trainer"):
        from .kubernetes import KubeflowBackend, KubeflowTrainerBackend, NativeBackend
        from .kubernetes.settings import load_settings

        chosen = {"native": NativeBackend, "kubeflow": KubeflowBackend, "kubeflow-trainer": KubeflowTrainerBackend}
        return chosen[name](store, settings=load_settings(**kubernetes) if kubernetes else None)
    if name == "local":
        from .local import LocalBackend

        return LocalBackend(store)
    raise BackendError(f"unknown backend {name!r}: use local, native, kubeflow or kubeflow-trainer")


__all__ = [
    "Backend",
    "BackendError",
    "RunLeftBehind",
    "Observation",
    "ResourceUnavailable",
    "SubmitHandle",
    "backend_name",
    "get_backend",
]
