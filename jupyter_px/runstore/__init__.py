"""The run store: one directory per run, the only thing UIs read."""

from .layout import InvalidRunId, RunPaths, px_home, validate_run_id
from .models import CodeSpec, ReplicaState, ReplicaStatus, RunRecord, RunState, RunStatus
from .store import (
    RunDamaged,
    RunNotFound,
    RunStore,
    atomic_write_bytes,
    atomic_write_json,
    initial_status,
    new_run_id,
    read_tail,
)

__all__ = [
    "InvalidRunId",
    "RunPaths",
    "px_home",
    "validate_run_id",
    "CodeSpec",
    "ReplicaState",
    "ReplicaStatus",
    "RunRecord",
    "RunState",
    "RunStatus",
    "RunDamaged",
    "RunNotFound",
    "RunStore",
    "atomic_write_bytes",
    "atomic_write_json",
    "initial_status",
    "new_run_id",
    "read_tail",
]
