"""The `native` backend: the run's pods, Service and ConfigMap, created by us, followed by the
run's follower, which also enforces `max_restarts` (the kubelet restarts a pod without limit)
and starts the whole gang again for `termination.max_retries` (`follower/gang_restart.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ....topology import Topology
from ..backend import KubernetesBackend
from ..shared.attempt_pods import keep_pods
from .manifests import FLAVOUR


class NativeBackend(KubernetesBackend):
    """Plain pods + one headless Service per run (the topology's `backend: native`)."""

    name = "native"
    flavour = FLAVOUR

    def _keep(self, run_dir: Path, topology: Topology, objects: list[dict[str, Any]]) -> None:
        """A run that may be started again keeps its pods to create them again."""
        if topology.termination is not None and topology.termination.max_retries > 0:
            keep_pods(run_dir, objects)
