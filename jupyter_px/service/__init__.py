"""The run service: the application layer between the surfaces (magics, CLI, REST handlers,
widgets, the public Python API) and the backends and run store below them.

    service = RunService(store)
    run_id = service.submit(ScriptFile("train.py"), topology)
    service.observe(run_id)        # pure: the stored status + a report on the run's owner
    service.wait(run_id)           # an explicit keeper: reconciles until the run has finished

Surfaces import from here, never from `jupyter_px.backends`; the backends' errors are
re-exported so a surface can catch them.
"""

from __future__ import annotations

from ..backends import Backend, BackendError, Observation, ResourceUnavailable
from .runs import LOGS_TAIL_BYTES, PushError, Rendered, RunActive, RunService, RunView, pickle_pushed, run_replicas
from .sources import (
    DEFAULT_TAG,
    CodeSource,
    FunctionCall,
    LoadedCode,
    NotebookCells,
    ScriptFile,
    SourceText,
    code_source,
    load_code,
    notebook_cells,
    notebook_code,
)

__all__ = [
    "DEFAULT_TAG",
    "LOGS_TAIL_BYTES",
    "Backend",
    "BackendError",
    "CodeSource",
    "FunctionCall",
    "LoadedCode",
    "NotebookCells",
    "Observation",
    "PushError",
    "Rendered",
    "ResourceUnavailable",
    "RunActive",
    "RunService",
    "RunView",
    "ScriptFile",
    "SourceText",
    "code_source",
    "load_code",
    "notebook_cells",
    "notebook_code",
    "pickle_pushed",
    "run_replicas",
]
