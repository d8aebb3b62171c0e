"""Backends: where replicas run. `get_backend(name)` picks one by the topology's `backend`."""

from __future__ import annotations

import logging

from ..runstore import RunNotFound, RunStore
from .base import Backend, BackendError, Observation, ResourceUnavailable, SubmitHandle

log = logging.getLogger(__name__)


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


def keep_runs(store: RunStore) -> int:
    """One pass of the explicit keeper: let the backend of every unfinished run reconcile it (a
    run whose local supervisor is gone becomes Lost; a Kubernetes run nobody follows gets a
    follower again). Reads never do this; the Jupyter server extension calls it periodically, and
    `Run.wait()` / `jupyter px follow` do it for the run they wait on. Returns how many runs were
    unfinished."""
    unfinished = 0
    for record, status in store.list():
        if status.state.finished:
            continue
        unfinished += 1
        try:
            get_backend(record.backend, store).reconcile(record.run_id)
        except (BackendError, RunNotFound, OSError, ValueError) as error:
            log.debug("jupyter_px: cannot keep run %s: %s", record.run_id, error)
    return unfinished


__all__ = [
    "Backend",
    "BackendError",
    "Observation",
    "ResourceUnavailable",
    "SubmitHandle",
    "backend_name",
    "get_backend",
    "keep_runs",
]
