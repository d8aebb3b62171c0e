"""The run's view-model: what every front-end shows of one run, as one typed JSON shape.

One shape, produced once in Python (`run_view.RunViewSource`): the JupyterLab extension renders
it (`GET px/api/runs/<ref>/view`, its `IRunView` in `labextension/src/types.ts`, generated from
these models' JSON Schema: `server/models/schema.py`), the ipywidgets monitor of other front-ends (VS Code,
the classic Notebook) draws its header and table from it, and a saved notebook's static HTML is
written from it. Words are decided here (`phase`, `counts`, `straggler`), not in each front-end.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReplicaRowView(_Model):
    """One row of the replica table (`monitor.ReplicaRow` as JSON)."""

    key: str = Field(description="role-index, as the store keys it")
    label: str = Field(description="what the job calls it: worker-1, chief")
    state: str = Field(description="the replica's state (Pending, Running, ...)")
    phase: str = Field(description="what the user reads: the state, starting, stopped when the run succeeded")
    restarts: int
    exit_code: str
    resources: str
    step: str = Field(description="`12/400` or `step 12`; empty before the first metric")
    reason: str
    last_line: str
    stalled_since: float | None = Field(
        default=None, description="while shown stalled: when it logged its last step (seconds since the epoch)"
    )
    stall_after_s: float | None = Field(
        default=None, description="while shown stalled: the quiet time it passed, max(60 s, 10x its median step)"
    )
    memory_limit_mib: float | None = Field(
        default=None,
        description="the memory limit its backend enforces (declared, or a Slurm partition's default), MiB",
    )


class PhaseCount(_Model):
    """How many replicas are in one phase, for the replicas bar (one segment per phase)."""

    phase: str
    state: str = Field(description="the state whose color the segment takes")
    count: int


class RankRate(_Model):
    """One replica's pace over the recent steps it logged (`rates.rank_rates`)."""

    replica: str
    label: str
    steps_per_s: float | None
    lag_s: float | None = Field(description="how much later than the median rank it reaches a step")
    waiting: float | None = Field(description="share of each step spent waiting for the last rank to get there")


class Failure(_Model):
    """Why a failed run failed, in one line, and where: the failing replica and, when the run
    records it, the notebook cell (`cell_id`, `cell_line`) a "Go to cell" button opens."""

    replica: str
    line: str
    cell_id: str | None = None
    cell_line: int | None = None


class ParamChange(_Model):
    name: str
    before: str | None
    after: str | None


class MetricChange(_Model):
    name: str
    before: float | None
    after: float | None
    better: bool | None = Field(description="whether the change is an improvement (None: no direction or no change)")


class CellChanges(_Model):
    """What changed since the previous run of the same notebook cell."""

    previous_run: str
    previous_name: str | None
    previous_state: str
    code_diff: str = Field(description="a unified diff of the code; empty when the code is the same")
    params: list[ParamChange]
    metrics: list[MetricChange]


class AttemptMark(_Model):
    """An attempt of a run started again as a whole (`termination`), where the plot marks it."""

    attempt: int
    started_at: float | None = Field(description="when it started (seconds since the epoch)")
    resumed_from: int | None = Field(description="the checkpoint step it resumed from; None: from the start")
    ended: str = Field(description="how it ended: `worker-1 killed by SIGKILL at step 1,287`; empty while it runs")


class RunViewModel(_Model):
    """One run as every front-end shows it (see the module docstring)."""

    run_id: str
    name: str | None
    backend: str
    state: str
    finished: bool
    reason: str | None
    message: str | None = Field(description="the run's message; for a Pending run, why it waits")
    owner_problem: str | None
    created_at: float
    started_at: float | None
    finished_at: float | None
    updated_at: float
    replicas: list[ReplicaRowView]
    replicas_total: int
    phases: list[PhaseCount]
    counts: str = Field(description="`2 running, 1 starting of 3`")
    progress: str | None = Field(description="`step 120/400 (slowest: worker-1)` when training logs total_steps")
    progress_fraction: float | None
    rates: list[RankRate]
    straggler: str | None = Field(description="`worker-3 is 1.8x slower than the median rank`, or None")
    stalled: str | None = Field(
        default=None,
        description="`Stalled: worker-1 (no step for 75 s) ...`: replicas that log steps and have logged none for "
        "a while, and what shows where each rank is; or None",
    )
    failure: Failure | None
    changes: CellChanges | None
    launch: str | None = Field(
        default=None, description='how the replicas started: "warm (template pid N)", or "cold: <why>"'
    )
    attempt: str | None = Field(
        default=None,
        description="for a run started again as a whole once an attempt failed: `attempt 2 of 3, from step 1,200`",
    )
    attempts: list[AttemptMark] = Field(default_factory=list, description="every attempt, once one failed")
