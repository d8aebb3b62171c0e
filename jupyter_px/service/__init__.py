"""The run service: the application layer between the surfaces (magics, CLI, REST handlers,
widgets, the public Python API) and the backends and run store below them.

    service = RunService(store)
    run_id = service.submit(Submission(ScriptFile("train.py"), topology))
    service.observe(run_id)        # pure: the stored status + a report on the run's owner
    service.wait(run_id)           # an explicit keeper: reconciles until the run has finished

Surfaces (magics, CLI, server, widgets) import from here, never from `jupyter_px.backends` or
`jupyter_px.runstore` (an import-linter contract): the backends' errors and the run store's
names a surface needs (states, errors, the run id pattern, a sweep's status) are re-exported here, as are the code
sources every surface builds (`jupyter_px.code`: `ScriptFile`, `SourceText`, `NotebookCells`).
"""

from __future__ import annotations

from ..backends import Backend, BackendError, Observation, ResourceUnavailable
from ..code.loading import LoadedCode, load_code
from ..code.sources import DEFAULT_TAG, CodeSource, FunctionCall, NotebookCells, ScriptFile, SourceText, code_source
from ..diagnostics.snapshots import NoStacks
from ..runstore import (
    ReplicaState,
    ReplicaStatus,
    RunDamaged,
    RunNotFound,
    RunRecord,
    RunState,
    RunStatus,
    StoreUnusable,
    px_home,
)
from ..runstore.layout import ROLE_PATTERN, RUN_ID_PATTERN, logged_by_the_code
from ..runstore.metrics_cursor import MetricsCursorError
from ..runstore.sweeps import SweepNotFound, SweepStatus, TrialState, state_word
from .runs import LOGS_TAIL_BYTES, Rendered, RunActive, RunService
from .submission import CodeOptions, Origin, Overrides, PushError, Submission, check_run_name, pickle_pushed
from .views import RunView, run_replicas

__all__ = [
    "ROLE_PATTERN",
    "RUN_ID_PATTERN",
    "MetricsCursorError",
    "NoStacks",
    "ReplicaState",
    "ReplicaStatus",
    "RunDamaged",
    "RunNotFound",
    "RunRecord",
    "RunState",
    "RunStatus",
    "StoreUnusable",
    "SweepNotFound",
    "SweepStatus",
    "TrialState",
    "state_word",
    "px_home",
    "logged_by_the_code",
    "CodeOptions",
    "Origin",
    "Overrides",
    "Submission",
    "check_run_name",
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
    "pickle_pushed",
    "run_replicas",
]
