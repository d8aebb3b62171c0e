"""What a replica is called on every surface: the name the job gives it.

TensorFlow's master is `chief` in its TF_CONFIG (unless the topology asks for `master`), so the
notebook's table and tabs, `%px_status`, `jupyter px status` and `run --wait`'s progress line all
say `chief` for it; the store keeps `master-0` (its key), which JSON output keeps as well.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def replica_label(role: str, index: int, tf_chief: bool = False) -> str:
    """`worker-1`; `chief` for a TensorFlow master written `chief` in TF_CONFIG."""
    if tf_chief and role == "master":
        return "chief" if index == 0 else f"chief-{index}"
    return f"{role}-{index}"


def is_tf_chief(topology: Mapping[str, Any] | None) -> bool:
    """Whether a run's topology (its stored dict) makes the master TensorFlow's `chief`."""
    topology = topology or {}
    if topology.get("framework") != "tensorflow":
        return False
    return ((topology.get("environment") or {}).get("tf_master_type") or "chief") == "chief"
