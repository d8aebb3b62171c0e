"""The `kubeflow` backend: one training-operator job per run; the operator makes the pods."""

from __future__ import annotations

from dataclasses import replace

from ....topology import Topology
from ..backend import KubernetesBackend
from ..shared.client import Cluster
from ..shared.preflight import mpijob_version
from ..shared.settings import KubernetesSettings
from .manifests import FLAVOUR


class KubeflowBackend(KubernetesBackend):
    """Kubeflow training operator v1 jobs: TFJob, PyTorchJob, MXJob, MPIJob."""

    name = "kubeflow"
    flavour = FLAVOUR

    def _cluster_settings(self, cluster: Cluster, topology: Topology) -> KubernetesSettings:
        """For MPI, the MPIJob API this cluster serves (training operator or mpi-operator),
        unless the settings name one."""
        if not topology.is_mpi or self.settings.mpijob_version != "auto":
            return self.settings
        return replace(self.settings, mpijob_version=mpijob_version(cluster))
