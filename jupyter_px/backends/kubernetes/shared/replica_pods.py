"""Which pod is which replica, one mapping per backend, both ways: the labels rendering puts on a
replica's pod template, and the replica the follower reads back from a pod's labels (ours, the
training operator's or JobSet's). Kept together so the two directions cannot drift apart.

- native: our role and index labels on every pod, read back as written.
- kubeflow: our role label on each replica spec's template; the operator adds the replica index,
  except on the MPI launcher (training-operator pkg/controller.v1/mpi/mpijob_controller.go
  newLauncher: replica-type `launcher`, no replica-index; mpi-operator v0.6.0: a launcher Job's
  pod labelled job-role `launcher`, no replica type or index): the launcher is its role's replica 0.
  Its log holds every rank's output (mpirun forwards it), metrics included. A replica spec that
  holds a role's later indices (a PyTorchJob without a master: worker 0 is rendered as the
  operator's Master) says by how much its pods' index is shifted (`px.jupyter.org/index-offset`;
  `PX_TASK_INDEX_OFFSET` inside the pod).
- kubeflow-trainer: every node carries the role `node`; the Job's completion index (label from
  Kubernetes 1.28, annotation before) is the node's rank, our replicas in rank order (the
  launcher job, for MPI, is the master; MPI's hosts are its workers in the hostfile's order, and
  the launcher, a node too, hosts the worker no `node` pod carries). `pod/entry.py` applies the
  same rank rule inside the pod.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .... import backend_table
from ....topology import Topology
from .names import LABEL_INDEX, LABEL_ROLE

#: The replica index the Kubeflow training operator puts on each pod of a replica spec.
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
#: mpi-operator v2beta1 labels its launcher with this role and no replica type or index
#: (kubeflow/mpi-operator v0.6.0 pkg/controller/mpi_job_controller.go defaultLabels).
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
#: Added to the operator's replica index to give our index (absent: 0).
INDEX_OFFSET_LABEL = "px.jupyter.org/index-offset"
COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_GLOBAL_INDEX_LABEL = "jobset.sigs.k8s.io/job-global-index"
#: The role label every Trainer v2 node carries (one template for every node).
TRAINER_NODE_ROLE = "node"

Replica = tuple[str, int]


@dataclass(frozen=True)
class ReplicaPods:
    """One backend's pod <-> replica mapping."""

    backend: str

    def pod_labels(self, role: str, index: int | None = None, index_offset: int = 0) -> dict[str, str]:
        """The replica labels rendering puts on a pod (template): `index` only where one template
        is one pod (native); the operator or JobSet labels the rest."""
        if self.backend == "kubeflow-trainer":
            return {LABEL_ROLE: TRAINER_NODE_ROLE}
        labels = {LABEL_ROLE: role}
        if index_offset:
            labels[INDEX_OFFSET_LABEL] = str(index_offset)
        if index is not None and self.backend == "native":
            labels[LABEL_INDEX] = str(index)
        return labels

    def replica_of(self, pod: dict[str, Any], topology: Topology) -> Replica | None:
        """Which of the run's replicas `pod` is, from its labels; None for a pod that is none."""
        labels = pod.get("metadata", {}).get("labels") or {}
        try:
            if self.backend == "kubeflow-trainer":
                annotations = pod.get("metadata", {}).get("annotations") or {}
                return self._trainer_replica(labels, annotations, topology)
            role = labels.get(LABEL_ROLE)
            index = labels.get(REPLICA_INDEX_LABEL if self.backend == "kubeflow" else LABEL_INDEX)
            launcher = labels.get(REPLICA_TYPE_LABEL) == "launcher" or labels.get(JOB_ROLE_LABEL) == "launcher"
            if index is None and self.backend == "kubeflow" and launcher:
                index = "0"  # the MPI launcher: one per job, labelled without an index
            if role is None or index is None:
                return None
            return role, int(index) + int(labels.get(INDEX_OFFSET_LABEL, "0"))
        except ValueError:
            return None

    @staticmethod
    def _trainer_replica(labels: dict[str, str], annotations: dict[str, str], topology: Topology) -> Replica | None:
        if labels.get(REPLICATED_JOB_LABEL) == "launcher":
            return "master", 0
        # the Job controller labels the index only from Kubernetes 1.28 (PodIndexLabel); the
        # annotation of the same name is there on every version (pkg/controller/job/indexed_job_utils.go)
        rank = int(labels.get(COMPLETION_INDEX_LABEL) or annotations.get(COMPLETION_INDEX_LABEL) or "0")
        if topology.is_mpi:
            # the hosts in the hostfile's order (the runtime's replicated jobs' order): a node job
            # after the launcher's (Trainer v2.1's deepspeed-distributed) has the launcher's pod
            # before it, which hosts worker 0 (runLauncherAsNode)
            after_launcher = labels.get(JOB_GLOBAL_INDEX_LABEL, "0") != "0"
            return "worker", rank + (1 if after_launcher else 0)
        for role, count in topology.counts().items():
            if rank < count:
                return role, rank
            rank -= count
        return None


def replica_pods(backend: str) -> ReplicaPods:
    """The mapping of a backend by its stored or rendered name (`kubernetes` is `native`)."""
    name = backend_table.canonical(backend)
    if name not in backend_table.family_names("kubernetes"):
        raise ValueError(f"no pod mapping for backend {backend!r}")
    return ReplicaPods(name)
