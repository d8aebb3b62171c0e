"""The run store: one directory per run, the only thing UIs read."""

from .layout import InvalidRunId, RunPaths, px_home, validate_run_id
from .models import CodeSpec, ReplicaState, ReplicaStatus, RunRecord, RunState, RunStatus
from .store import RunNotFound, RunStore, atomic_write_bytes, atomic_write_json, initial_status, new_run_id

__all__ = [
    "InvalidRunId", "RunPaths", "px_home", "validate_run_id",
    "CodeSpec", "ReplicaState", "ReplicaStatus", "RunRecord", "RunState", "RunStatus",
    "RunNotFound", "RunStore", "atomic_write_bytes", "atomic_write_json", "initial_status", "new_run_id",
]


class _CallableRunsPackage(__import__("types").ModuleType):
    """`jupyter_px.runs` is this package *and* the `runs()` listing that `jupyter_px` re-exports:
    once the package is imported, Python binds it to the name `jupyter_px.runs`, shadowing the
    function; calling the package lists the runs, so `jupyter_px.runs()` works either way."""

    def __call__(self, *args, **kwargs):
        from ..api import runs

        return runs(*args, **kwargs)


__import__("sys").modules[__name__].__class__ = _CallableRunsPackage
