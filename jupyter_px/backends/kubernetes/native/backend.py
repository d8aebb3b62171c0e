"""The `native` backend: the run's pods, Service and ConfigMap, created by us, followed by the
run's follower, which also enforces `max_restarts` (the kubelet restarts a pod without limit)."""

from __future__ import annotations

from ..backend import KubernetesBackend
from .manifests import FLAVOUR


class NativeBackend(KubernetesBackend):
    """Plain pods + one headless Service per run (the topology's `backend: native`)."""

    name = "native"
    flavour = FLAVOUR
