"""The REST API's request bodies and how a raw body becomes one (`parse_body`).

A bad body is a 400 that names the field and the value (`cells: 'some' is not 'all' or
'tagged'`): every field's check says what it expected, and unknown fields are refused first (a
typo explains the rest).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from ...service import RUN_ID_PATTERN
from ...topology import TopologyError
from ...topology.yaml_text import check_document_size

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
    try:
        check_document_size(value)  # the 2 MiB every form of a topology is held to
    except TopologyError as error:
        raise PydanticCustomError("px_value", "{problem}", {"problem": error.problems[0].message}) from None
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


class KillRequest(Body):
    """`POST runs/<ref>/replicas/<key>/kill` `{"signal"?: "KILL"}`: end one running replica on
    purpose, as a crash would (`jupyter px kill`), to see the run's recovery work."""

    signal: Literal["KILL", "TERM", "INT", "SEGV", "ABRT"] = Field(
        default="KILL", description="the signal sent, by its name without SIG"
    )


class CompareRequest(Body):
    """`POST compare`: the runs to compare (references, a name glob, a sweep: any together) and how."""

    runs: list[AString] = Field(default_factory=list, max_length=1000)
    pattern: AString | None = None
    sweep: AString | None = None
    metrics: list[AString] | None = None
    points: Annotated[int, BeforeValidator(_points)] = 500
    optimization: dict[str, Literal["min", "max"]] | None = Field(
        default=None,
        validation_alias=AliasChoices("optimization", "optimisation"),
        description="which way is better, per metric (`optimisation`, its first spelling, is still read)",
    )
    all_params: bool = Field(default=False, description="every param a column, not only those that differ")
    best: Literal["succeeded", "common_step", "all"] = Field(
        default="succeeded",
        description="how the best run is chosen: among those that succeeded, at a common step, or among all",
    )


class CompareTensorBoardRequest(Body):
    """`POST compare/tensorboard`: one TensorBoard over these runs."""

    runs: list[AString] = Field(min_length=1, max_length=1000)


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
    return f"{field}: {shown(error['input'])} is not valid ({error['msg']})"


#: Items of a list, and characters of other values, that an error message repeats.
SHOWN_ITEMS, SHOWN_CHARS = 3, 80


def shown(value: Any) -> str:
    """A value as an error message shows it: a list as its length and its first few items
    (a 20,000-id list must not come back whole), anything else cut at SHOWN_CHARS."""
    if isinstance(value, list | tuple) and len(value) > SHOWN_ITEMS:
        first = ", ".join(shown(item) for item in value[:SHOWN_ITEMS])
        return f"a list of {len(value):,} items ([{first}, ...])"
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else f"{text[: SHOWN_CHARS - 3]}..."


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
