"""The REST API's response bodies: what each route answers, declared once (`dump` checks
every answer against its model, so what is sent is what is declared).

Response shapes are those the sidebar was written against (`service.views` for runs); the
metrics `cursor` is an opaque string: the client sends back what it got, as `?since=`.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from ...compare.figures import ComparisonFigures


class Reply(BaseModel):
    """A response body: what is declared, nothing else (an undeclared field is a bug here)."""

    model_config = ConfigDict(extra="forbid")


# ---------------------------------------------------------------------------------------------
# Responses

RunStateName = Literal["Pending", "Running", "Succeeded", "Failed", "Stopped", "Lost"]


class Problem(Reply):
    """One thing wrong with a topology: the dotted field path (`a.b[2].c`) and what."""

    path: str
    message: str


class Validation(Reply):
    """`POST topology/validate`: the normalized topology, or every problem (`valid: false`)."""

    valid: bool
    topology: dict[str, Any] | None = None
    yaml: str | None = None
    summary: str | None = None
    message: str | None = None
    error: str | None = None
    problems: list[Problem] | None = None


class ErrorReply(Reply):
    """Any 4xx/5xx answer of the API: one line; `problems` for an invalid topology."""

    message: str
    error: str | None = None
    problems: list[Problem] | None = None
    output: str | None = None  # TensorBoard's own output when it could not start


class RenderedObject(Reply):
    kind: str
    name: str


class Rendered(Reply):
    """`POST topology/render`: what a Kubernetes backend would create."""

    backend: str
    objects: list[RenderedObject]
    yaml: str


class RunSummary(Reply):
    """A row of the runs list: `service.views.run_summary`, as `jupyter px runs --json`."""

    run_id: str
    name: str | None
    state: RunStateName
    finished: bool
    reason: str | None
    message: str | None
    backend: str
    framework: str | None
    submitted_from: str | None
    user: str | None
    created_at: float
    started_at: float | None
    finished_at: float | None
    updated_at: float
    replicas_total: int
    replica_counts: dict[str, int]
    owner_problem: str | None = Field(
        default=None, description="what a read found wrong with the run's owner; the keeper, not the read, repairs it"
    )
    launch: str | None = Field(
        default=None,
        description='how the replicas started: "warm (template pid N)" or "cold: <why>" (local and SSH backends)',
    )


class Collective(Reply):
    """One collective of a process group, as PyTorch's flight recorder saw it."""

    op: str = Field(description="`all_reduce`, `barrier`, ...")
    seq: int | None = Field(default=None, description="its number in the group's sequence, from 1")
    group: str | None = Field(default=None, description="the process group's name (`default_pg`)")
    state: str | None = None


class ReplicaFailure(Reply):
    """Where a replica's code raised: what "Go to cell" opens (`cell_id`, else the cell whose
    `execution_count` it is, else the `cell_index`-th cell of `notebook`), at `line`."""

    exception: str
    label: str | None = None
    line: int | None = None
    function: str | None = None
    cell_id: str | None = None
    execution_count: int | None = None
    cell_index: int | None = None
    notebook: str | None = None
    collectives: list[Collective] | None = Field(
        default=None, description="for a collective's timeout: its process group's last collectives, newest last"
    )


class Replica(Reply):
    key: str = Field(description="the store's key (`master-0`: its log and metrics are named by it)")
    label: str | None = Field(
        default=None, description="what the job calls it (`chief` for a TensorFlow master; else the key); always sent"
    )
    role: str
    index: int
    state: str
    exit_code: int | None
    signal: str | None
    restarts: int
    reason: str | None
    message: str | None
    started_at: float | None
    finished_at: float | None
    address: str | None
    failure: ReplicaFailure | None = Field(default=None, description='where its code raised: what "Go to cell" opens')
    stalled_since: float | None = Field(
        default=None,
        description="while it is shown Stalled (a badge, not a state; still Running): when it logged its last step",
    )
    stall_after_s: float | None = Field(
        default=None, description="while Stalled: the quiet time (s) it passed, max(60 s, 10x its median step time)"
    )


class Code(Reply):
    """How the run's code runs (the run record's `code`)."""

    entrypoint: str
    language: str
    args: list[str]
    source: str | None
    pushed: list[str]
    returns: bool = Field(default=False, description="its last expression is each replica's result (`run.results()`)")


class Attempt(Reply):
    """One attempt of a run started again as a whole (`termination`): see runstore's AttemptRecord."""

    attempt: int
    started_at: float | None = None
    finished_at: float | None = None
    failed: str | None = None
    reason: str | None = None
    exit_code: int | None = None
    signal: str | None = None
    message: str | None = None
    step: int | None = None
    resumed_from: int | None = None
    retried: bool = False
    log_offsets: dict[str, int] = {}
    workers: int | None = Field(default=None, description="elastic workers: how many took part")
    returned: str | None = Field(
        default=None, description="elastic workers: the workers that came back, which ended it"
    )


class Checkpoint(Reply):
    """A complete checkpoint in the run's outputs (`tracking.save_checkpoint`)."""

    scope: str
    step: int
    time: float
    size: int


class RunDetail(RunSummary):
    """`GET runs/<ref>`, and the answer to a submission or a stop."""

    replicas: list[Replica]
    topology: dict[str, Any]
    code: Code
    workdir: str | None
    host: str | None
    attempt: int = Field(default=1, description="which attempt runs (or ran last), from 1")
    max_attempts: int = Field(default=1, description="how many attempts it may take (`termination.max_retries` + 1)")
    attempts: list[Attempt] = Field(default_factory=list, description="every attempt, once one failed")
    checkpoints: list[Checkpoint] = []


class Progress(Reply):
    """How far training is: the last step logged, of how many (when the code logs `total_steps`)."""

    step: int | None
    total_steps: int | None


class RunsPage(Reply):
    """`GET runs?offset=&limit=`: run summaries newest first, and each unfinished run's progress."""

    runs: list[RunSummary]
    total: int
    offset: int
    limit: int
    progress: dict[str, Progress]


class LogChunk(Reply):
    """`GET runs/<ref>/logs?role=&index=&offset=`: text from `offset`, and where to continue."""

    replica: str
    text: str
    offset: int
    finished: bool


#: How a value JSON cannot hold is named in `Series.nonfinite`.
NONFINITE_NAMES = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _finite_values(data: Any) -> Any:
    """A series' non-finite values as null in `values`, each named in `nonfinite` by its position
    (`JSON.parse` refuses bare `NaN`/`Infinity`; the plot draws a gap there)."""
    if not isinstance(data, dict) or not isinstance(data.get("values"), list):
        return data
    values, nonfinite = [], {}
    for i, value in enumerate(data["values"]):
        if isinstance(value, float) and not math.isfinite(value):
            nonfinite[str(i)] = NONFINITE_NAMES[repr(value)]
            value = None
        values.append(value)
    if not nonfinite:
        return data
    return {**data, "values": values, "nonfinite": {**data.get("nonfinite", {}), **nonfinite}}


class Series(Reply):
    """One metric of one replica: columns of equal length. A value that was NaN or infinite is
    null in `values`, and `nonfinite` (only present then) says which it was, by position."""

    steps: list[int | None]
    values: list[float | None]
    times: list[float]
    nonfinite: dict[str, Literal["NaN", "Infinity", "-Infinity"]] | None = None

    @model_validator(mode="before")
    @classmethod
    def _encode_nonfinite(cls, data: Any) -> Any:
        return _finite_values(data)


def _cursor_text(value: Any) -> Any:
    """A cursor is text on the wire; a number (a time cursor) is sent as its exact repr."""
    return repr(float(value)) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


class MetricsPage(Reply):
    """`GET runs/<ref>/metrics?since=CURSOR`: the points after the cursor, and the next cursor.

    `cursor` is opaque: send back exactly what the last answer held (null: from the start)."""

    run_id: str
    finished: bool
    series: dict[str, dict[str, Series]]
    cursor: Annotated[str | None, BeforeValidator(_cursor_text)]
    progress: dict[str, Progress]
    history_pending: bool = Field(description="older points are still being read: ask again")


class TensorBoardStarted(Reply):
    """`POST runs/<ref>/tensorboard`: the TensorBoard serving the run, through this server."""

    status: Literal["launched", "reused"]
    url: str
    port: int
    key: str


class ReplicaKilled(Reply):
    """`POST runs/<ref>/replicas/<key>/kill`: what was signalled, in words (`sent SIGKILL to
    worker-1 of run exp-1a2b (pid 4242)`)."""

    run_id: str
    replica: str
    said: str


class RunDeleted(Reply):
    """`DELETE runs/<id>/directory`: the run whose directory was removed, and what it had left
    outside the store that was removed first (a Kubernetes run's job, pods, Services, ConfigMap)."""

    run_id: str
    deleted: bool
    removed: list[str] = Field(default_factory=list)


class WarmMemory(Reply):
    """A process's memory in MiB: resident, its own (freed when it stops), proportional."""

    rss_mib: float
    uss_mib: float
    pss_mib: float


class WarmTemplate(Reply):
    """One warm template of the local backend (`jupyter px warm`)."""

    key: str
    framework: str | None
    state: str
    running: bool
    pid: int | None
    python: str | None
    owner: str
    memory: WarmMemory | None
    standby_memory: WarmMemory | None
    idle_s: float | None
    stops_in_s: float | None
    preload: list[str]
    error: str | None
    stop_reason: str | None


class WarmTemplates(Reply):
    """`GET px/api/warm`: every template, newest first."""

    templates: list[WarmTemplate]


class ComparedRun(Reply):
    run_id: str
    name: str | None
    state: str
    created_at: float


class CompareCurve(Reply):
    """One run's curve of a metric: at most `points` points chosen by MinMaxLTTB from `total`
    (finite values only), from its chief replica's series."""

    run_id: str
    replica: str
    steps: list[float]
    values: list[float]
    times: list[float] = Field(description="each point's wall time (seconds since the epoch)")
    total: int


class ComparedMetric(Reply):
    """One metric of a comparison: each run's curve, and which run is best and by what rule."""

    name: str
    optimization: Literal["min", "max"]
    best_run: str | None
    best_rule: str = Field(description='what "best" meant: "lowest among the 3 runs that succeeded"')
    common_step: float | None = Field(description="the step every run was compared at (best=common_step)")
    curves: list[CompareCurve]


class ParamImportance(Reply):
    """How much a param accounts for the first metric across the runs (`compare.importance`)."""

    param: str
    importance: float
    correlation: float | None
    runs: int


class CompareRow(Reply):
    """A run's row of the table: the params shown, and per metric its final and best value."""

    run_id: str
    name: str | None
    state: str
    params: dict[str, Any]
    final: dict[str, float | None]
    best: dict[str, float | None]
    best_step: dict[str, float | None]


class Comparison(Reply):
    """`POST compare`: downsampled curves per metric (the best run named), and the table."""

    runs: list[ComparedRun]
    metrics: list[ComparedMetric]
    params: list[str] = Field(description="the param columns: those that differ between runs, or all")
    hidden_params: int = Field(description="params left out because every run has the same value")
    rows: list[CompareRow]
    points: int
    objective: str | None = Field(description="the metric the params' view is about (a sweep's objective, else loss)")
    importance: list[ParamImportance] = Field(description="the params that matter for `objective`")
    figures: ComparisonFigures  # the params' view, drawn (`compare.figures`)


SweepStateName = Literal["Pending", "Running", "Succeeded", "Failed", "Stopped"]
TrialStateName = Literal["Pending", "Running", "Complete", "Pruned", "Failed", "Stopped"]


class SweepTrial(Reply):
    """One trial of a sweep (`runstore.sweeps.TrialRow`): its run, values and objective."""

    number: int
    state: TrialStateName
    run_id: str | None
    params: dict[str, Any]
    value: float | None
    step: int | None
    intermediate: list[list[float | None]] = Field(description="[step, value] pairs reported")
    reason: str | None
    started_at: float | None
    finished_at: float | None
    values: dict[str, float | None] | None = Field(default=None, description="each objective's final value")
    runs: list[str] = Field(default_factory=list, description="a promoted Hyperband trial's runs, a rung each")
    nonfinite: dict[str, Literal["NaN", "Infinity", "-Infinity"]] | None = Field(
        default=None,
        description="a diverged trial's values that JSON cannot hold (null in their place), by where they were: "
        "value, values.<objective>, intermediate.<position>",
    )


class SweepObjective(Reply):
    """One objective of a sweep: a metric and which way is better."""

    name: str
    direction: str


class Sweep(Reply):
    """A sweep (`sweeps.view.sweep_json`, as `jupyter px sweep status --json`); `trials` only
    where asked for (one sweep, or the list with `?trials=true`)."""

    sweep_id: str
    name: str | None
    state: SweepStateName
    message: str | None
    owner_problem: str | None
    created_at: float
    started_at: float | None
    finished_at: float | None
    n_trials: int
    concurrency: int
    objective: str | None
    direction: str | None
    counts: dict[str, int]
    best: int | None = Field(description="the best trial's number")
    objectives: list[SweepObjective] = Field(default_factory=list)
    pareto: list[int] | None = Field(
        default=None, description="a multi-objective sweep's result: the trials on its Pareto front"
    )
    trials: list[SweepTrial] | None = None


class SweepsPage(Reply):
    """`GET sweeps?limit=&trials=`: the sweeps, newest first."""

    sweeps: list[Sweep]


def dump(model: type[Reply], data: Any) -> dict[str, Any]:
    """`data` checked against a response model, as the JSON object to send (fields not set by the
    handler are left out, so optional fields are absent rather than null, as the sidebar expects)."""
    reply = data if isinstance(data, model) else model.model_validate(data)
    return reply.model_dump(mode="json", exclude_unset=True)
