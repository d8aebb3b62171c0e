"""What a replica is called on every surface: the name the job gives it (the rule is the
topology's, `jupyter_px.topology.naming`, so that backends' messages say the same).

TensorFlow's master is `chief` in its TF_CONFIG (unless the topology asks for `master`), so the
notebook's table and tabs, `%px_status`, `%px_logs`, `jupyter px status`, `jupyter px logs` and
`run --wait`'s progress line all say `chief` for it; the store keeps `master-0` (its key), which
JSON output keeps as well, beside the label.
"""

from __future__ import annotations

from ..topology.naming import ReplicaNames, is_tf_chief, replica_label

__all__ = ["ReplicaNames", "is_tf_chief", "replica_label"]
