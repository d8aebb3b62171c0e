"""The sidebar's TypeScript types are generated from the REST models, and what is committed is what
the models give now.

`jupyter_px/server/models/schema.py` writes every model of `TYPESCRIPT_NAMES` as one JSON Schema
document (`labextension/src/types.schema.json`); `jlpm build:types`, run by `jlpm build`, turns it
into `labextension/src/types.ts` with json-schema-to-typescript. Here both are generated again, into
a temporary folder, by the same module and the same package.json script, and compared with the
committed files: a model changed without regenerating fails, naming the command that regenerates.
(`.ci/run` needs no step of its own for it: this test is in the README's test command, and in the
lowest-versions lane, where pydantic 2.8 must write the same document.)

`api.ts` is checked too: each call's answer is the interface of the route's model, and the metrics
cursor goes back as the model's cursor type.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic import Field

from jupyter_px.server import models
from jupyter_px.server.models import schema

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "labextension" / "src"
SCHEMA, TYPES = SOURCE / "types.schema.json", SOURCE / "types.ts"
API = SOURCE / "api.ts"
NODE_BIN = ROOT / "node_modules" / ".bin"
REGENERATE = f"`{schema.COMMAND} && jlpm build:types`"


def build_types(schema_text: str, folder: Path) -> str:
    """types.ts as `jlpm build:types` makes it of `schema_text`: package.json's own script, run in
    `folder` (a copy of the paths it reads) with the checkout's node_modules."""
    if not (NODE_BIN / "json2ts").exists() or shutil.which("node") is None:
        pytest.fail("the sidebar's npm packages are not installed here: run `jlpm install` (Node.js needed)")
    script = json.loads((ROOT / "package.json").read_text())["scripts"]["build:types"]
    (folder / "labextension" / "src").mkdir(parents=True)
    (folder / "labextension" / "src" / "types.schema.json").write_text(schema_text)
    shutil.copy(ROOT / ".prettierrc", folder / ".prettierrc")  # the format `jlpm lint:check` holds it to
    env = {**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", script], cwd=folder, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"jlpm build:types failed:\n{done.stdout}{done.stderr}"
    return (folder / "labextension" / "src" / "types.ts").read_text()


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[str, str]:
    """(the JSON Schema document, types.ts) generated now from the models."""
    text = schema.text()
    return text, build_types(text, tmp_path_factory.mktemp("generated"))


def test_the_committed_schema_is_what_the_models_give(generated):
    assert SCHEMA.read_text() == generated[0], f"{SCHEMA.name} is not what the models give: run {REGENERATE}"


def test_the_committed_types_are_what_the_build_makes_of_them(generated):
    assert TYPES.read_text() == generated[1], f"{TYPES.name} is not what the models give: run {REGENERATE}"


def test_the_types_say_they_are_generated_and_how():
    head = TYPES.read_text()[:400]
    assert "Generated from the REST models" in head and schema.COMMAND in head and "jlpm build:types" in head
    assert schema.COMMAND in json.loads(SCHEMA.read_text())["$comment"]


def test_types_ts_declares_the_models_and_nothing_else():
    """One declaration per model and per named literal (plus `RestBody`, the document's own type):
    no field's title became a type of its own, no model was left out."""
    declared = re.findall(r"^export (?:interface|type) (\w+)", TYPES.read_text(), flags=re.M)
    assert len(declared) == len(set(declared))
    expected = {*models.TYPESCRIPT_NAMES.values(), *models.TYPESCRIPT_ALIASES, "RestBody"}
    assert set(declared) == expected


def test_the_field_docs_become_the_comments():
    """A field's description is its TypeScript comment, and a model's docstring and class its interface's."""
    text = TYPES.read_text()
    body = _interface(text, "IRunSummary")
    assert "what a read found wrong with the run's owner" in body
    assert body.index("owner_problem?: string | null;") > body.index("what a read found wrong")
    assert "`jupyter_px.server.models.replies.RunSummary`" in text.split("export interface IRunSummary")[0][-600:]


def test_a_model_changed_without_regenerating_fails(monkeypatch, tmp_path, generated):
    """The check is not vacuous: a field added to a model changes both generated files."""

    class LogChunk(models.LogChunk):
        """A log chunk with a field the committed types do not have."""

        encoding: str = Field(description="how the text was decoded")

    names = {(LogChunk if model is models.LogChunk else model): name for model, name in models.TYPESCRIPT_NAMES.items()}
    monkeypatch.setattr(schema, "TYPESCRIPT_NAMES", names)
    drifted = schema.text()
    assert drifted != generated[0]
    types = build_types(drifted, tmp_path)
    assert types != generated[1]
    assert "how the text was decoded" in _interface(types, "ILogChunk")
    assert "encoding: string;" in _interface(types, "ILogChunk")


# ---------------------------------------------------------------------------------------------
# api.ts: each route's answer and body are the model's interface


def _strip_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)


def _body_of(text: str, start: int) -> str:
    """The text between the brace at `start` and its match."""
    depth = 0
    for index in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0:
            return text[start + 1 : index]
    raise AssertionError("unbalanced braces")


def _interface(text: str, name: str) -> str:
    match = re.search(rf"^export interface {name} {{", text, flags=re.M)
    assert match, f"no interface {name}"
    return _body_of(text, match.end() - 1)


#: api.ts function -> (the model its answer is, the model its body is or None).
API_CALLS = {
    "validateTopology": (models.Validation, None),
    "renderTopology": (models.Rendered, models.RenderRequest),
    "listRuns": (models.RunsPage, None),
    "submitRun": ((models.RunDetail, models.Sweep), models.SubmitRequest),  # a sweep section: its sweep
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
    "getSweepView": (models.SweepView, None),
}


def _functions(text: str) -> dict[str, tuple[str, str]]:
    """{name: (parameters, body)} of the exported async functions of api.ts."""
    out = {}
    # The body's brace ends the signature's last line (a return type may hold braces of its own).
    for match in re.finditer(r"export async function (\w+)\(([^)]*)\)[^\n]*{\n", text):
        out[match.group(1)] = (match.group(2), _body_of(text, match.end() - 2))
    return out


def _spaced(text: str) -> str:
    return " ".join(text.split())


def test_the_rest_client_asks_for_the_models():
    functions = _functions(_strip_comments(API.read_text()))
    assert set(API_CALLS) <= set(functions), f"api.ts lacks {sorted(set(API_CALLS) - set(functions))}"
    for name, (answer, body) in API_CALLS.items():
        parameters, code = functions[name]
        answers = answer if isinstance(answer, tuple) else (answer,)
        asked = {t.strip() for union in re.findall(r"requestAPI<([\w |]+)>", code) for t in union.split("|")}
        assert asked == {models.TYPESCRIPT_NAMES[a] for a in answers}, name
        if body is not None:
            assert f"body: {models.TYPESCRIPT_NAMES[body]}" in _spaced(parameters), name
    # The metrics cursor goes back as it came: `since` is typed as the generated `cursor`.
    declared = dict(_spaced(part).split(": ", 1) for part in functions["readMetrics"][0].split(",") if part.strip())
    cursor = re.search(r"^\s*cursor: ([^;]+);", _interface(TYPES.read_text(), "IMetricsUpdate"), flags=re.M)
    assert cursor and declared["since"] == _spaced(cursor.group(1))
