"""What a run directory holds: the record (what was submitted) and the status (what happened).

Both are JSON files written atomically by whoever knows (the API writes the record, the
backend's supervisor or watcher writes the status); every UI only reads them.
"""

from __future__ import annotations

import time
from enum import Enum
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field


class RunState(str, Enum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    STOPPED = "Stopped"
    LOST = "Lost"

    @property
    def finished(self) -> bool:
        return self in FINISHED


FINISHED = {RunState.SUCCEEDED, RunState.FAILED, RunState.STOPPED, RunState.LOST}


class ReplicaState(str, Enum):
    PENDING = "Pending"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    STOPPED = "Stopped"
    LOST = "Lost"


class CodeSpec(BaseModel):
    """How a replica runs the submitted code (files under the run's `code/`)."""

    model_config = ConfigDict(extra="ignore")

    entrypoint: str = "main.py"
    language: str = Field("python", description="python, or ipython for code with %magics / !shell lines")
    args: list[str] = Field(default_factory=list)
    source: Optional[str] = Field(None, description="Where the code came from: a path, or 'cell'/'notebook'")
    pushed: list[str] = Field(default_factory=list, description="Names shipped with --push (code/pushed.pkl)")


class RunRecord(BaseModel):
    """Written once at submission; never changed afterwards."""

    model_config = ConfigDict(extra="ignore")

    run_id: str
    name: Optional[str] = None
    backend: str = "local"
    topology: dict[str, Any]
    code: CodeSpec = Field(default_factory=CodeSpec)
    workdir: Optional[str] = None
    created_at: float = Field(default_factory=time.time)
    user: Optional[str] = None
    host: Optional[str] = None
    submitted_from: Optional[str] = Field(None, description="cli, magic, api, sidebar")
    versions: dict[str, str] = Field(default_factory=dict)


class ReplicaStatus(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: str
    index: int
    state: ReplicaState = ReplicaState.PENDING
    pid: Optional[int] = None
    exit_code: Optional[int] = None
    signal: Optional[str] = None
    restarts: int = 0
    started_at: Optional[float] = None
    finished_at: Optional[float] = None
    reason: Optional[str] = Field(None, description="OOMKilled, Error, Signaled, StoppedByRun, ...")
    message: Optional[str] = None
    address: Optional[str] = None

    @property
    def key(self) -> str:
        return f"{self.role}-{self.index}"


class RunStatus(BaseModel):
    model_config = ConfigDict(extra="ignore")

    run_id: str
    state: RunState = RunState.PENDING
    reason: Optional[str] = None
    message: Optional[str] = None
    started_at: Optional[float] = None
    finished_at: Optional[float] = None
    updated_at: float = Field(default_factory=time.time)
    supervisor_pid: Optional[int] = None
    replicas: list[ReplicaStatus] = Field(default_factory=list)

    def replica(self, role: str, index: int) -> ReplicaStatus:
        for replica in self.replicas:
            if replica.role == role and replica.index == index:
                return replica
        raise KeyError(f"run {self.run_id} has no replica {role}-{index}")

    def counts(self) -> dict[str, int]:
        """{replica state: how many}, for progress bars and one-line summaries."""
        out: dict[str, int] = {}
        for replica in self.replicas:
            out[replica.state.value] = out.get(replica.state.value, 0) + 1
        return out
