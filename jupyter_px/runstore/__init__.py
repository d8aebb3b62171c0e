"""The run store: one directory per run, the only thing UIs read.

Names are imported on first use (PEP 562 `__getattr__`): every replica imports
`jupyter_px.runstore.layout` through `jupyter_px.tracking`, and importing a submodule runs this
file first, so it must not pull in pydantic (the models) there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_attributes

if TYPE_CHECKING:
    from .errors import RunDamaged, RunNotFound, StoreUnusable
    from .files import atomic_write_bytes, atomic_write_json, new_run_id
    from .layout import InvalidRunId, RunPaths, px_home, validate_run_id
    from .models import CodeSpec, ReplicaState, ReplicaStatus, RunRecord, RunState, RunStatus
    from .store import RunStore, read_tail

#: Public name -> submodule that defines it.
_LAZY = {
    "InvalidRunId": "layout",
    "RunPaths": "layout",
    "px_home": "layout",
    "validate_run_id": "layout",
    "CodeSpec": "models",
    "ReplicaState": "models",
    "ReplicaStatus": "models",
    "RunRecord": "models",
    "RunState": "models",
    "RunStatus": "models",
    "RunDamaged": "errors",
    "RunNotFound": "errors",
    "RunStore": "store",
    "StoreUnusable": "errors",
    "atomic_write_bytes": "files",
    "atomic_write_json": "files",
    "new_run_id": "files",
    "read_tail": "store",
}

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
    "StoreUnusable",
    "atomic_write_bytes",
    "atomic_write_json",
    "new_run_id",
    "read_tail",
]


__getattr__, __dir__ = lazy_attributes(
    __name__, {name: f"{__name__}.{module}" for name, module in _LAZY.items()}, globals()
)
