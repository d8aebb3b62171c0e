"""What a run directory holds: the record (what was submitted) and the status (what happened).

Both are JSON files written atomically by whoever knows (the API writes the record, the
backend's supervisor or watcher writes the status); every UI only reads them.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from enum import Enum, StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .. import backend_table


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


class Reason(StrEnum):
    """Why a run or a replica is in its state: one name per cause on every backend.

    The status files keep a reason as a string: a Kubernetes backend passes on reasons the
    cluster gives that are not listed here (a Kubeflow job condition's reason, a container's
    waiting reason), so readers compare with these members and show any other string as it is.
    Files written by older versions still read: `LEGACY_REASONS` maps their spellings. A
    `StrEnum`, so a member formats as its value (`f"{Reason.ERROR}"` is `Error`) in messages.
    """

    # a replica ended
    COMPLETED = "Completed"  # exited 0 (a run: it succeeded)
    ERROR = "Error"  # exited with a non-zero code
    SIGNALED = "Signaled"  # killed by a signal
    OOM_KILLED = "OOMKilled"  # over its memory limit
    STOPPED_BY_RUN = "StoppedByRun"  # the run ended it (another replica failed, or the run succeeded)
    STOPPED_BY_USER = "StoppedByUser"  # a user's stop (the run's reason too, on every backend)
    POD_DELETED = "PodDeleted"  # its pod was deleted by someone else (kubectl, an eviction)
    COLLECTIVE_TIMEOUT = "CollectiveTimeout"  # it never joined a collective its peers timed out in (a run: so)
    LEFT_RUN = "LeftRun"  # an elastic worker lost beyond the run's retries: the run went on without it
    # a replica waits (Kubernetes)
    UNSCHEDULABLE = "Unschedulable"
    CONTAINER_CREATING = "ContainerCreating"
    IMAGE_PULL_BACK_OFF = "ImagePullBackOff"
    ERR_IMAGE_PULL = "ErrImagePull"
    CRASH_LOOP_BACK_OFF = "CrashLoopBackOff"
    # a run ended, or its owner did
    REPLICA_FAILED = "ReplicaFailed"  # the first replica to fail failed the run
    SUPERVISOR_LOST = "SupervisorLost"  # the local supervisor died; the run is Lost
    SUPERVISOR_ERROR = "SupervisorError"  # the local supervisor could not set the run up
    LOST_CONTACT = "LostContact"  # the Kubernetes follower gave up on an API server that did not answer

    @classmethod
    def read(cls, value: object) -> object:
        """A stored reason as a member when it is one (old spellings included), else unchanged."""
        if not isinstance(value, str) or isinstance(value, Reason):
            return value
        legacy = LEGACY_REASONS.get(value)
        if legacy is not None:
            return legacy
        try:
            return cls(value)
        except ValueError:
            return value  # a reason the cluster gave: kept as it is


#: Spellings older versions wrote -> today's member. A user's stop was `Stopped` on Kubernetes.
LEGACY_REASONS = {"Stopped": Reason.STOPPED_BY_USER}


class CodeSpec(BaseModel):
    """How a replica runs the submitted code (files under the run's `code/`)."""

    model_config = ConfigDict(extra="ignore")

    entrypoint: str = "main.py"
    language: str = Field(default="python", description="python, or ipython for code with %magics / !shell lines")
    args: list[str] = Field(default_factory=list)
    source: str | None = Field(default=None, description="Where the code came from: a path, or 'cell'/'notebook'")
    pushed: list[str] = Field(default_factory=list, description="Names shipped with --push (code/pushed.pkl)")
    returns: bool = Field(
        default=False, description="the code's last expression (a notebook cell's) is each replica's result"
    )


class TrialOf(BaseModel):
    """A trial's link to its sweep: which sweep, which trial, with which values."""

    model_config = ConfigDict(extra="ignore")

    sweep_id: str
    trial: int
    params: dict[str, Any] = Field(default_factory=dict)


class RunRecord(BaseModel):
    """Written once at submission; never changed afterwards."""

    model_config = ConfigDict(extra="ignore")

    run_id: str
    name: str | None = None
    backend: str = "local"
    topology: dict[str, Any]
    code: CodeSpec = Field(default_factory=lambda: CodeSpec())
    workdir: str | None = None
    created_at: float = Field(default_factory=time.time)
    user: str | None = None
    host: str | None = None
    submitted_from: str | None = Field(default=None, description="cli, magic, api, sidebar")
    versions: dict[str, str] = Field(default_factory=dict)
    sweep: TrialOf | None = Field(default=None, description="the sweep this run is a trial of")
    cold: bool = Field(default=False, description="asked to start cold (--cold): no replica is forked from a template")

    @field_validator("backend", mode="before")
    @classmethod
    def _one_native_name(cls, value: object) -> object:
        """Older versions recorded the native Kubernetes backend as `kubernetes`."""
        return backend_table.canonical(value) if isinstance(value, str) else value


class ReplicaFailure(BaseModel):
    """Where a replica's code raised (the runner's record, `code.source_map`): the exception and,
    for code shipped from a notebook, the cell and the line in it (what "Go to cell" needs)."""

    model_config = ConfigDict(extra="ignore")

    exception: str
    label: str | None = Field(default=None, description="'cell [5]', or the shipped file's name")
    line: int | None = Field(default=None, description="the line in that cell (or file), from 1")
    function: str | None = None
    cell_id: str | None = Field(default=None, description="the notebook cell's id (nbformat 4.5), when known")
    execution_count: int | None = Field(default=None, description="the cell's [n] when it was shipped")
    cell_index: int | None = Field(default=None, description="the cell's position in the notebook, from 0")
    notebook: str | None = None
    collectives: list[dict[str, Any]] | None = Field(
        default=None,
        description="for a collective's timeout, the process group's last collectives (op, seq, group, state), "
        "newest last: PyTorch's flight recorder",
    )


class ReplicaStatus(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: str
    index: int
    state: ReplicaState = ReplicaState.PENDING
    pid: int | None = None
    exit_code: int | None = None
    signal: str | None = None
    restarts: int = 0
    started_at: float | None = None
    finished_at: float | None = None
    reason: str | None = Field(default=None, description="a Reason (OOMKilled, Error, StoppedByRun, ...)")
    message: str | None = None
    address: str | None = None
    points_lost: int = Field(
        default=0, description="metric points log_metrics accepted that were never written: killed before the flush"
    )
    points_dropped: int = Field(default=0, description="metric points log_metrics refused: its queue was full")
    failure: ReplicaFailure | None = Field(default=None, description="where its code raised, when it did")
    memory_limit_mib: float | None = Field(
        default=None, description="the memory it may use, where the backend knows (declared, or a scheduler's default)"
    )
    stalled_since: float | None = Field(
        default=None,
        description="while it is shown Stalled (still Running, but it logs steps and has logged none for "
        "max(60 s, 10x its median step time)): when it logged its last step",
    )
    stall_after_s: float | None = Field(default=None, description="while Stalled: the quiet time it passed, in s")
    launch: str | None = Field(
        default=None,
        description="how its process started (local and SSH backends): 'cold', 'forked (zygote pid N)', "
        "'spawn-ahead (pool interpreter pid N)', 'warm (template pid N)' (SSH), or 'cold: <why>'",
    )

    @field_validator("reason", mode="before")
    @classmethod
    def _known_reason(cls, value: object) -> object:
        return Reason.read(value)

    @property
    def key(self) -> str:
        return f"{self.role}-{self.index}"


class AttemptRecord(BaseModel):
    """One attempt of a run that is started again as a whole (`termination.max_retries`): when
    it ran, from which checkpoint, which replica's failure ended it and why, how far it got, and
    where each replica's log of it begins (every attempt appends to the same log, after a marked
    line). Listed once a first attempt failed; the last one is the attempt running (or that ended the run)."""

    model_config = ConfigDict(extra="ignore")

    attempt: int
    started_at: float | None = None
    finished_at: float | None = None
    failed: str | None = Field(default=None, description="the replica whose failure ended it (worker-1)")
    reason: str | None = Field(default=None, description="its reason (Signaled, OOMKilled, Error)")
    exit_code: int | None = None
    signal: str | None = None
    message: str | None = None
    step: int | None = Field(default=None, description="the last step the run logged before it failed")
    resumed_from: int | None = Field(
        default=None, description="the checkpoint step it resumed from (the newest every replica had saved)"
    )
    retried: bool = Field(default=False, description="whether a next attempt followed")
    workers: int | None = Field(default=None, description="elastic workers: how many took part")
    returned: str | None = Field(
        default=None, description="elastic workers: the workers that came back, which ended it (worker-2)"
    )
    log_offsets: dict[str, int] = Field(default_factory=dict, description="replica -> byte its log of it starts at")

    def describe(self) -> str:
        """How it ended: `worker-1 killed by SIGKILL at step 1,287`, `Slurm job 5 requeued
        (TimeLimit) at step 1,287` ("" while it runs)."""
        if self.failed is None:
            return f"{self.returned} came back" if self.returned else ""
        if self.reason == Reason.OOM_KILLED:
            what = "OOMKilled"
        elif self.signal:
            what = f"killed by {self.signal}"
        elif self.exit_code is None and self.message:  # not a process's end: a Slurm requeue (TimeLimit)
            what = self.message
        else:
            what = f"exited with code {self.exit_code}"
        return f"{self.failed} {what}" + (f" at step {self.step:,}" if self.step is not None else "")


class CheckpointInfo(BaseModel):
    """A complete checkpoint in the run's outputs (`tracking.save_checkpoint`)."""

    model_config = ConfigDict(extra="ignore")

    scope: str = Field(description="the replica that saved it (worker-1), or 'shared'")
    step: int
    time: float
    size: int


class RunOwner(BaseModel):
    """The process that owns a run's lifecycle and writes its status: the local supervisor, the
    run's own follower (Kubernetes, Slurm), or a Jupyter server following the run on its shared
    watch. A pid alone may name a later, unrelated process, so the owner is recorded with its
    process creation time (`jupyter_px.processes.detached.ProcessIdentity`); a server also names the host
    of followers it runs, which it unregisters when it stops (handing its runs back)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    kind: Literal["supervisor", "follower", "server", "keeper"] | None = Field(
        description="supervisor (local backend), follower (the run's own follower process), server "
        "(a Jupyter server following it on one watch per namespace) or keeper (a process keeping a "
        "run that waits as a held task of a Slurm job array: the run's follower starts when Slurm "
        "starts the task); None only in a status written before owners were recorded (its "
        "`supervisor_pid` held either)"
    )
    pid: int
    started_at: float | None = Field(
        default=None,
        description="when the process started, in seconds since boot (`processes.start_time`; a wall-clock creation "
        "time in an older status, None in an older still)",
    )
    host: str | None = Field(
        default=None,
        description="kind server: the host of followers in that process (registered under the run "
        "store's `hosts/` while it follows runs)",
    )


class RunStatus(BaseModel):
    model_config = ConfigDict(extra="ignore")

    run_id: str
    state: RunState = RunState.PENDING
    reason: str | None = Field(default=None, description="a Reason (Completed, ReplicaFailed, StoppedByUser, ...)")
    message: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    updated_at: float = Field(default_factory=time.time)
    owner: RunOwner | None = Field(
        default=None, description="who keeps this status true while the run is unfinished; None: nobody"
    )
    replicas: list[ReplicaStatus] = Field(default_factory=list)
    launch: str | None = Field(
        default=None,
        description="how the replicas start: 'warm (template pid N)', or 'cold: <why>' (local and SSH backends)",
    )
    attempt: int = Field(default=1, description="which attempt runs (or ran last): 2 after one gang restart")
    max_attempts: int = Field(default=1, description="1 + termination.max_retries")
    attempts: list[AttemptRecord] = Field(default_factory=list, description="every attempt, once one failed")
    checkpoints: list[CheckpointInfo] = Field(
        default_factory=list, description="the newest complete checkpoint of each replica (and the shared one)"
    )

    @field_validator("reason", mode="before")
    @classmethod
    def _known_reason(cls, value: object) -> object:
        return Reason.read(value)

    @model_validator(mode="before")
    @classmethod
    def _read_supervisor_pid(cls, data: Any) -> Any:
        """A status written before `owner` existed names its owner `supervisor_pid`, which held
        the local supervisor's pid or the Kubernetes follower's: an owner of unknown kind."""
        if isinstance(data, dict) and "supervisor_pid" in data and "owner" not in data:
            data = dict(data)
            pid = data.pop("supervisor_pid")
            data["owner"] = {"kind": None, "pid": pid} if pid else None
        return data

    @classmethod
    def initial(cls, run_id: str, replicas: Iterable[tuple[str, int]]) -> RunStatus:
        """A run about to start: every replica Pending (what a backend writes before it starts)."""
        return cls(run_id=run_id, replicas=[ReplicaStatus(role=role, index=index) for role, index in replicas])

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
