"""The sidebar's TypeScript types against the REST models they mirror, so neither drifts alone.

`labextension/src/types.ts` declares one interface per model of `jupyter_px/server/models/`
(`TYPESCRIPT_NAMES`); this test reads the TypeScript (a small reader for the subset types.ts
uses: interfaces, `extends`, unions, arrays, index signatures, string literals, type aliases) and
compares it with each model's own JSON Schema: the same field names, the same optionality, the
same primitive types. `api.ts` is checked too: each call's answer is the interface of the route's
model, and the metrics cursor goes back as the model's cursor type.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from jupyter_px.server import models

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [ROOT / "labextension" / "src" / name for name in ("types.ts", "request.ts")]
API = ROOT / "labextension" / "src" / "api.ts"
REQUESTS = {
    models.SubmitRequest,
    models.RenderRequest,
    models.TensorBoardRequest,
    models.CompareRequest,
    models.CompareTensorBoardRequest,
}

Type = frozenset  # a union of members: "string", "number", "boolean", "null", "any", ("lit", s), ...


# ---------------------------------------------------------------------------------------------
# TypeScript -> types


def _strip_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)


def _split_top(text: str, separator: str) -> list[str]:
    """`text` split on `separator` outside brackets and quotes."""
    parts, depth, quote, current = [], 0, "", ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "({[<":
            depth += 1
        elif char in ")}]>":
            depth -= 1
        if char == separator and depth == 0 and not quote:
            parts.append(current)
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current)
    return [part.strip() for part in parts]


def _body_of(text: str, start: int) -> tuple[str, int]:
    """The text between the brace at `start` and its match, and the index after the match."""
    depth = 0
    for index in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0:
            return text[start + 1 : index], index + 1
    raise AssertionError("unbalanced braces")


class TypeScript:
    """The interfaces and type aliases of some TypeScript files."""

    def __init__(self, texts: list[str]):
        self.interfaces: dict[str, tuple[list[str], str]] = {}  # name -> (bases, body)
        self.aliases: dict[str, str] = {}
        for raw in texts:
            text = _strip_comments(raw)
            for match in re.finditer(r"export interface (\w+)(?:\s+extends\s+([\w\s,]+))?\s*{", text):
                body, _ = _body_of(text, match.end() - 1)
                bases = [b.strip() for b in (match.group(2) or "").split(",") if b.strip()]
                self.interfaces[match.group(1)] = (bases, body)
            for match in re.finditer(r"export type (\w+)\s*=\s*([^;]+);", text):
                self.aliases[match.group(1)] = " ".join(match.group(2).split())

    def fields(self, name: str) -> dict[str, tuple[bool, Type]]:
        """{field: (optional, type)} of an interface, its bases' fields included."""
        bases, body = self.interfaces[name]
        out: dict[str, tuple[bool, Type]] = {}
        for base in bases:
            out.update(self.fields(base))
        for member in _split_top(body.replace("\n", " "), ";"):
            match = re.fullmatch(r"(\w+)(\??)\s*:\s*(.+)", member, flags=re.S)
            assert match, f"{name}: cannot read the member {member!r}"
            out[match.group(1)] = (bool(match.group(2)), self.type(match.group(3)))
        return out

    def type(self, text: str) -> Type:
        text = " ".join(text.split())
        members = _split_top(text, "|")
        if len(members) > 1:
            return Type(member for part in members for member in self.type(part))
        if text.startswith("(") and text.endswith(")"):
            return self.type(text[1:-1])
        if text.endswith("[]"):
            return Type({("array", self.type(text[:-2]))})
        if text.startswith("[") and text.endswith("]"):
            return Type({("tuple", tuple(self.type(part) for part in _split_top(text[1:-1], ",")))})
        if text.startswith("{"):
            match = re.fullmatch(r"{ ?\[\w+: string\]: (.+?);? ?}", text)
            assert match, f"only index signatures are read inline, not {text!r}"
            return Type({("map", self.type(match.group(1)))})
        if text[0] in "'\"":
            return Type({("lit", text[1:-1])})
        if text in ("string", "number", "boolean", "null", "any"):
            return Type({text})
        if text in self.aliases:
            return self.type(self.aliases[text])
        if text in self.interfaces:
            return Type({("ref", text)})
        raise AssertionError(f"unknown TypeScript type {text!r}")


# ---------------------------------------------------------------------------------------------
# JSON Schema -> types


def schema_type(schema: dict[str, Any], defs: dict[str, Any]) -> Type:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        target = defs[name]
        if "enum" in target:  # an enum is a union of literals in TypeScript
            return schema_type(target, defs)
        model = next(m for m in models.TYPESCRIPT_NAMES if m.__name__ == name)
        return Type({("ref", models.TYPESCRIPT_NAMES[model])})
    if "anyOf" in schema:
        return Type(member for option in schema["anyOf"] for member in schema_type(option, defs))
    if "const" in schema:
        return Type({("lit", schema["const"])})
    if "enum" in schema:
        return Type(("lit", value) for value in schema["enum"])
    kind = schema.get("type")
    if kind is None:
        return Type({"any"})
    if kind == "array" and "prefixItems" in schema:
        return Type({("tuple", tuple(schema_type(item, defs) for item in schema["prefixItems"]))})
    if kind == "array":
        return Type({("array", schema_type(schema.get("items", {}), defs))})
    if kind == "object":
        extra = schema.get("additionalProperties", True)
        return Type({("map", Type({"any"}) if extra is True else schema_type(extra, defs))})
    return Type({{"integer": "number"}.get(kind, kind)})


def model_fields(model: type[Any]) -> dict[str, tuple[bool, Type]]:
    schema = model.model_json_schema(mode="validation" if model in REQUESTS else "serialization")
    defs = schema.get("$defs", {})
    required = set(schema.get("required", []))
    return {name: (name not in required, schema_type(field, defs)) for name, field in schema["properties"].items()}


def without_null(kind: Type) -> Type:
    return Type(member for member in kind if member != "null")


# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def typescript() -> TypeScript:
    return TypeScript([path.read_text() for path in SOURCES])


@pytest.mark.parametrize("model", list(models.TYPESCRIPT_NAMES), ids=lambda model: model.__name__)
def test_each_interface_is_its_model(typescript, model):
    """Same fields, same optionality; same types (an optional field may be absent instead of
    null: the API leaves unset optional fields out)."""
    name = models.TYPESCRIPT_NAMES[model]
    assert name in typescript.interfaces, f"types.ts has no interface {name} for models.{model.__name__}"
    ours, theirs = model_fields(model), typescript.fields(name)
    assert sorted(theirs) == sorted(ours), f"{name} vs models.{model.__name__}: fields differ"
    for field, (optional, kind) in ours.items():
        ts_optional, ts_kind = theirs[field]
        where = f"{name}.{field} vs models.{model.__name__}.{field}"
        assert ts_optional == optional, f"{where}: optional in one only"
        if optional:
            kind, ts_kind = without_null(kind), without_null(ts_kind)
        assert ts_kind == kind, f"{where}: {sorted(map(str, ts_kind))} != {sorted(map(str, kind))}"


def test_every_interface_in_types_ts_is_checked(typescript):
    checked = set(models.TYPESCRIPT_NAMES.values())
    declared = {name for name in typescript.interfaces if name != "IApiResponse"}
    assert declared <= checked, f"interfaces without a model: {sorted(declared - checked)}"


#: api.ts function -> (the model its answer is, the model its body is or None).
API_CALLS = {
    "validateTopology": (models.Validation, None),
    "renderTopology": (models.Rendered, models.RenderRequest),
    "listRuns": (models.RunsPage, None),
    "submitRun": (models.RunDetail, models.SubmitRequest),
    "getRun": (models.RunDetail, None),
    "stopRun": (models.RunDetail, None),
    "readLog": (models.LogChunk, None),
    "readMetrics": (models.MetricsPage, None),
    "startTensorBoard": (models.TensorBoardStarted, models.TensorBoardRequest),
    "deleteRun": (models.RunDeleted, None),
    "compareRuns": (models.Comparison, models.CompareRequest),
    "startCompareTensorBoard": (models.TensorBoardStarted, models.CompareTensorBoardRequest),
    "listSweeps": (models.SweepsPage, None),
    "getRunView": (models.RunViewModel, None),
    "getStacks": (models.StacksSnapshot, None),
    "takeStacks": (models.StacksSnapshot, None),
    "getSweep": (models.Sweep, None),
    "stopSweep": (models.Sweep, None),
    "getSweepView": (models.SweepViewModel, None),
}


def _functions(text: str) -> dict[str, tuple[str, str]]:
    """{name: (parameters, body)} of the exported async functions of api.ts."""
    out = {}
    # The body's brace ends the signature's last line (a return type may hold braces of its own).
    for match in re.finditer(r"export async function (\w+)\(([^)]*)\)[^\n]*{\n", text):
        body, _ = _body_of(text, match.end() - 2)
        out[match.group(1)] = (match.group(2), body)
    return out


def test_the_rest_client_asks_for_the_models(typescript):
    functions = _functions(_strip_comments(API.read_text()))
    assert set(API_CALLS) <= set(functions), f"api.ts lacks {sorted(set(API_CALLS) - set(functions))}"
    for name, (answer, body) in API_CALLS.items():
        parameters, code = functions[name]
        assert set(re.findall(r"requestAPI<(\w+)>", code)) == {models.TYPESCRIPT_NAMES[answer]}, name
        if body is not None:
            assert f"body: {models.TYPESCRIPT_NAMES[body]}" in " ".join(parameters.split()), name
    # The metrics cursor goes back as it came: `since` is typed as the model's `cursor`.
    declared = _split_top(functions["readMetrics"][0], ",")
    parameters = {part.split(":", 1)[0].strip(): part.split(":", 1)[1] for part in declared}
    assert typescript.type(parameters["since"]) == model_fields(models.MetricsPage)["cursor"][1]


def test_the_reader_sees_a_drift():
    """The check is not vacuous: a field renamed, made optional or retyped is caught."""
    source = SOURCES[0].read_text()
    for original, drifted in [
        ("  cursor: string | null;", "  cursor: number | null;"),
        ("  total: number;", "  total?: number;"),
        ("  host: string | null;", "  hostname: string | null;"),
    ]:
        assert original in source
        changed = TypeScript([source.replace(original, drifted), SOURCES[1].read_text()])
        with pytest.raises(AssertionError):
            for model in models.TYPESCRIPT_NAMES:
                test_each_interface_is_its_model(changed, model)
