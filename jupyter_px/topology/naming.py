"""What a replica is called: the name its job gives it, on every surface and in every message.

TensorFlow's master is `chief` in its TF_CONFIG (unless the topology asks for `master`), and
TensorFlow calls it so in its own logs; so a TensorFlow run's master is `chief` wherever people
read it: the notebook's table, tabs and `%px_status`, `jupyter px status`, `jupyter px logs` (its
lines tagged `[chief.0]`) and `run --wait`'s progress line, the REST API's replica `label`, and
the run's own messages ("chief succeeded", "stopped because chief failed"). What people type
finds it by either name (`--role chief` or `--role master`). The store keeps the key `master-0`
(its log, metrics and status are named by it) and JSON output keeps the key beside the label.

Here, below the backends, so that the messages a backend writes name replicas as the surfaces
that show them do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .models import Topology


def replica_label(role: str, index: int, tf_chief: bool = False) -> str:
    """`worker-1`; `chief` for a TensorFlow master written `chief` in TF_CONFIG (`chief-1` for a
    second one)."""
    if tf_chief and role == "master":
        return "chief" if index == 0 else f"chief-{index}"
    return f"{role}-{index}"


def is_tf_chief(topology: Topology | Mapping[str, Any] | None) -> bool:
    """Whether a run's topology (the model, or its stored dict) makes the master TensorFlow's `chief`."""
    if isinstance(topology, Topology):
        return topology.framework == "tensorflow" and topology.environment.tf_master_type == "chief"
    topology = topology or {}
    if topology.get("framework") != "tensorflow":
        return False
    return ((topology.get("environment") or {}).get("tf_master_type") or "chief") == "chief"


@dataclass(frozen=True)
class ReplicaNames:
    """A run's replicas as its job calls them, and what people type to name one."""

    tf_chief: bool = False

    @classmethod
    def of(cls, topology: Topology | Mapping[str, Any] | None) -> ReplicaNames:
        return cls(is_tf_chief(topology))

    def role(self, role: str) -> str:
        """The role as the job calls it: `chief` for a TensorFlow master."""
        return "chief" if self.tf_chief and role == "master" else role

    def label(self, role: str, index: int) -> str:
        """`worker-1`, `chief`."""
        return replica_label(role, index, self.tf_chief)

    def prefix(self, role: str, index: int) -> str:
        """What each printed log line of the replica starts with: `[worker.1] `, `[chief.0] `."""
        return f"[{self.role(role)}.{index}] "

    def stored_role(self, typed: str) -> str:
        """The store's role for a role as typed: `chief` is a TensorFlow run's `master`."""
        return "master" if self.tf_chief and typed == "chief" else typed
