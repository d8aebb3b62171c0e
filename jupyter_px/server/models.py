"""The REST API's request and response bodies, as pydantic models: one definition per body.

Handlers parse every request body with these (`parse_body`), so a bad body is a 400 that names
the field and the value (`cells: 'some' is not 'all' or 'tagged'`), and build every answer with
them (`dump`), so what is sent is what is declared here. The sidebar's TypeScript types
(`labextension/src/types.ts`, used by `api.ts`) mirror these models; `tests/test_rest_models.py`
compares the two by field name, optionality and primitive type, so they cannot drift apart.

Response shapes are those the sidebar was written against (`service.views` for runs);
the metrics `cursor` is an opaque string: the client sends back what it got, as `?since=`.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from ..service import RUN_ID_PATTERN

#: The cell tag whose cells a notebook submission ships with `cells: "tagged"`.
DEFAULT_TAG = "px"


class BodyError(ValueError):
    """A request body that cannot be used: one line that names the field and the value."""


def _typed(message: str, check: Any) -> Any:
    """A before-validator that refuses a value `check` rejects, with `message` (`{value!r}` in it)."""

    def validate(value: Any) -> Any:
        if not check(value):
            raise PydanticCustomError("px_value", message, {"value": repr(value)})
        return value

    return BeforeValidator(validate)


def _a_type_name(value: Any) -> str:
    return type(value).__name__


def _topology_value(value: Any) -> Any:
    if not isinstance(value, (dict, str)):
        raise PydanticCustomError(
            "px_value", "expected an object or YAML text, got {kind}", {"kind": _a_type_name(value)}
        )
    return value


#: A topology as the form sends it (an object) or as imported (polyaxonfile YAML text).
TopologyInput = Annotated[dict[str, Any] | str, BeforeValidator(_topology_value)]
#: A file's path in the file browser (the server reads it through its contents manager).
FilePath = Annotated[
    str, _typed("{value} is not a path (give the file's path in the file browser)", lambda v: isinstance(v, str))
]
AString = Annotated[str, _typed("{value} is not a string", lambda v: isinstance(v, str))]
CellTag = Annotated[str, _typed("{value} is not a cell tag", lambda v: isinstance(v, str) and bool(v.strip()))]
Cells = Annotated[
    Literal["all", "tagged"], _typed("{value} is not 'all' or 'tagged'", lambda v: v in ("all", "tagged"))
]


class Body(BaseModel):
    """A request body: a JSON object with only the fields declared (a typo is an error)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Reply(BaseModel):
    """A response body: what is declared, nothing else (an undeclared field is a bug here)."""

    model_config = ConfigDict(extra="forbid")


# ---------------------------------------------------------------------------------------------
# Requests


class ValidateRequest(Body):
    """`POST topology/validate`."""

    topology: TopologyInput


class CodeRequest(BaseModel):
    """The code a submission names: a notebook (all code cells, or those tagged `tag`) or a script."""

    kind: Literal["notebook", "script"]
    path: str
    tag: str | None = None


class SubmitRequest(Body):
    """`POST runs`: the topology and exactly one of a notebook or a script in the server's root."""

    topology: TopologyInput
    notebook: FilePath | None = None
    script: FilePath | None = None
    cells: Cells = "all"
    tag: CellTag = DEFAULT_TAG
    name: AString | None = None

    #: Whether the body must name code (a dry run renders an empty `main.py` without).
    code_required: ClassVar[bool] = True

    @model_validator(mode="after")
    def _one_code_source(self) -> Any:
        if self.notebook is not None and self.script is not None:
            raise PydanticCustomError(
                "px_body", "give exactly one of notebook (an .ipynb path) or script (a .py path), not both"
            )
        if self.code_required and self.notebook is None and self.script is None:
            raise PydanticCustomError("px_body", "give exactly one of notebook (an .ipynb path) or script (a .py path)")
        return self

    @property
    def code(self) -> CodeRequest | None:
        if self.notebook is not None:
            return CodeRequest(kind="notebook", path=self.notebook, tag=self.tag if self.cells == "tagged" else None)
        if self.script is not None:
            return CodeRequest(kind="script", path=self.script)
        return None


class RenderRequest(SubmitRequest):
    """`POST topology/render`: a submission's fields (code optional), and the backend to render for."""

    backend: AString | None = None
    name: AString | None = "run"

    code_required: ClassVar[bool] = False


#: A run id as the store names runs (no names, no `last`: a request that acts on several runs
#: or removes one names each exactly).
RunIdText = Annotated[
    str,
    _typed(
        "{value} is not a run id (lowercase letters, digits and '-')",
        lambda v: isinstance(v, str) and RUN_ID_PATTERN.match(v) is not None,
    ),
]


class TensorBoardRequest(Body):
    """`POST runs/<ref>/tensorboard` `{"also"?: [run ids]}`: one TensorBoard for the run and the
    runs of `also` (the sidebar's multi-select), each run a folder in its list of runs."""

    also: list[RunIdText] = Field(default_factory=list, max_length=50)


def _points(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int) or not 10 <= value <= 10_000:
        raise PydanticCustomError("px_value", "{value} is not a whole number from 10 to 10000", {"value": repr(value)})
    return value


class CompareRequest(Body):
    """`POST compare`: the runs to compare (references, a name glob, a sweep: any together) and how."""

    runs: list[AString] = Field(default_factory=list, max_length=1000)
    pattern: AString | None = None
    sweep: AString | None = None
    metrics: list[AString] | None = None
    points: Annotated[int, BeforeValidator(_points)] = 500
    optimisation: dict[str, Literal["min", "max"]] | None = None
    all_params: bool = False


class CompareTensorBoardRequest(Body):
    """`POST compare/tensorboard`: one TensorBoard over these runs."""

    runs: list[AString] = Field(min_length=1, max_length=1000)


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
    #: What a read found wrong with the run's owner ("the supervisor (pid 123) is gone"): reported,
    #: not repaired (the keeper does that). Absent or null when nothing is.
    owner_problem: str | None = None


class Replica(Reply):
    #: the store's key (`master-0`: its log and metrics are named by it)
    key: str
    #: what the job calls it (`chief` for a TensorFlow master; else the key); always sent
    label: str | None = None
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


class Code(Reply):
    """How the run's code runs (the run record's `code`)."""

    entrypoint: str
    language: str
    args: list[str]
    source: str | None
    pushed: list[str]


class RunDetail(RunSummary):
    """`GET runs/<ref>`, and the answer to a submission or a stop."""

    replicas: list[Replica]
    topology: dict[str, Any]
    code: Code
    workdir: str | None
    host: str | None


class Progress(Reply):
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


class RunDeleted(Reply):
    """`DELETE runs/<id>/directory`: the run whose directory was removed, and what it had left
    outside the store that was removed first (a Kubernetes run's job, pods, Services, ConfigMap)."""

    run_id: str
    deleted: bool
    removed: list[str] = Field(default_factory=list)


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
    total: int


class ComparedMetric(Reply):
    name: str
    optimisation: Literal["min", "max"]
    best_run: str | None
    curves: list[CompareCurve]


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


SweepStateName = Literal["Pending", "Running", "Succeeded", "Failed", "Stopped"]
TrialStateName = Literal["Pending", "Running", "Complete", "Pruned", "Failed", "Stopped"]


class SweepTrial(Reply):
    """One trial of a sweep (`sweeps.store.TrialRow`): its run, values and objective."""

    number: int
    state: TrialStateName
    run_id: str | None
    params: dict[str, Any]
    value: float | None
    step: int | None
    intermediate: list[list[float]] = Field(description="[step, value] pairs reported")
    reason: str | None
    started_at: float | None
    finished_at: float | None
    values: dict[str, float] | None = Field(default=None, description="each objective's final value")
    runs: list[str] = Field(default_factory=list, description="a promoted Hyperband trial's runs, a rung each")


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


#: Every body the API sends or receives, for the TypeScript check (model -> TS interface name).
TYPESCRIPT_NAMES: dict[type[BaseModel], str] = {
    SubmitRequest: "ISubmission",
    RenderRequest: "IRenderRequest",
    Validation: "IValidation",
    Problem: "IProblem",
    Rendered: "IRendered",
    RenderedObject: "IRenderedObject",
    RunSummary: "IRunSummary",
    Replica: "IReplica",
    Code: "ICode",
    RunDetail: "IRunDetail",
    Progress: "IProgress",
    RunsPage: "IRunsPage",
    LogChunk: "ILogChunk",
    Series: "ISeries",
    MetricsPage: "IMetricsUpdate",
    TensorBoardStarted: "ITensorBoard",
    TensorBoardRequest: "ITensorBoardRequest",
    RunDeleted: "IRunDeleted",
    CompareRequest: "ICompareRequest",
    CompareTensorBoardRequest: "ICompareTensorBoardRequest",
    ComparedRun: "IComparedRun",
    CompareCurve: "ICompareCurve",
    ComparedMetric: "IComparedMetric",
    CompareRow: "ICompareRow",
    Comparison: "IComparison",
    SweepTrial: "ISweepTrial",
    SweepObjective: "ISweepObjective",
    Sweep: "ISweep",
    SweepsPage: "ISweepsPage",
}


# ---------------------------------------------------------------------------------------------
# Parsing and answering

B = TypeVar("B", bound=Body)


def _field(location: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in location)


def _message(error: Any, model: type[BaseModel]) -> str:
    """One pydantic error as `field: what` (the value shown as the user wrote it)."""
    kind, location = error["type"], tuple(error["loc"])
    field = _field(location)
    if kind == "extra_forbidden":
        if not model.model_fields:
            return f"unknown field {field!r} (this request takes no fields)"
        return f"unknown field {field!r} (expected: {', '.join(sorted(model.model_fields))})"
    if kind == "missing":
        return f"{field}: required field is missing"
    if kind == "px_body":
        return error["msg"]
    if kind == "px_value":
        return f"{field}: {error['msg']}"
    return f"{field}: {error['input']!r} is not valid ({error['msg']})"


def _order(error: Any) -> int:
    """Unknown fields first (a typo explains the rest), then in the order of the fields."""
    return 0 if error["type"] == "extra_forbidden" else 1


#: The deepest nesting of arrays and objects a request body may have (a topology needs about 6):
#: deeper input would exhaust the stack of the parsers and validators it goes through.
MAX_BODY_DEPTH = 64


def body_depth(value: Any) -> int:
    """How deeply arrays and objects nest in a parsed JSON value (without recursing)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_BODY_DEPTH:
            break
        stack.extend((child, depth + 1) for child in children)
    return deepest


def parse_body(model: type[B], raw: bytes | None) -> B:
    """The request body as `model`, or `BodyError` naming the first field (and value) that is wrong."""
    try:
        body = json.loads(raw or b"{}")
    except ValueError as error:
        raise BodyError(f"the request body is not JSON ({error})") from None
    except RecursionError:
        raise BodyError(f"the request body nests arrays or objects too deeply (at most {MAX_BODY_DEPTH})") from None
    if body_depth(body) > MAX_BODY_DEPTH:
        raise BodyError(f"the request body nests arrays or objects too deeply (at most {MAX_BODY_DEPTH})")
    if not isinstance(body, dict):
        raise BodyError(f"the request body must be a JSON object, got {type(body).__name__}")
    try:
        return model.model_validate(body)
    except ValidationError as error:
        errors = sorted(error.errors(include_url=False), key=_order)
        raise BodyError(_message(errors[0], model)) from None


def dump(model: type[Reply], data: Any) -> dict[str, Any]:
    """`data` checked against a response model, as the JSON object to send (fields not set by the
    handler are left out, so optional fields are absent rather than null, as the sidebar expects)."""
    reply = data if isinstance(data, model) else model.model_validate(data)
    return reply.model_dump(mode="json", exclude_unset=True)
