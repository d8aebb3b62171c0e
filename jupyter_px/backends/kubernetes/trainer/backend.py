"""The `kubeflow-trainer` backend: one TrainJob per run on a ClusterTrainingRuntime; Trainer
makes a JobSet, whose Jobs make the pods."""

from __future__ import annotations

from dataclasses import replace

from ....topology import Topology
from ..backend import KubernetesBackend
from ..shared.client import Cluster
from ..shared.preflight import trainer_version
from ..shared.settings import KubernetesSettings
from .manifests import FLAVOUR


class KubeflowTrainerBackend(KubernetesBackend):
    """Kubeflow Trainer v2: one TrainJob on a ClusterTrainingRuntime."""

    name = "kubeflow-trainer"
    flavour = FLAVOUR

    def _runtime(self, topology: Topology) -> str | None:
        return self.settings.trainer_mpi_runtime if topology.is_mpi else self.settings.trainer_runtime

    def _cluster_settings(self, cluster: Cluster, topology: Topology) -> KubernetesSettings:
        """The TrainJob API this cluster serves, unless the settings name one."""
        if self.settings.trainer_version != "auto":
            return self.settings
        return replace(self.settings, trainer_version=trainer_version(cluster))
