"""Every REST body as one JSON Schema document: what the sidebar's TypeScript types are generated from.

`python -m jupyter_px.server.models.schema labextension/src/types.schema.json` writes it; the
extension's `jlpm build:types` (run by `jlpm build`) turns it into `labextension/src/types.ts` with
json-schema-to-typescript. Both files are committed, and `tests/test_rest_models.py` generates them
again and compares, so a model changed without regenerating fails the tests. (The build reads the
committed document rather than running Python: pip's isolated build, which runs `jlpm build`, has
none of this package's dependencies.)

The document is pydantic's JSON Schema of each model with five changes:

* each model is named as the TypeScript names it (`TYPESCRIPT_NAMES`: `RunSummary` is
  `IRunSummary`) and described by its docstring and the class it is, and a named literal
  (`TYPESCRIPT_ALIASES`: `RunStateName` is `RunState`) is a definition of its own that fields refer to;
* fields have no title (json-schema-to-typescript would declare a type for each); their
  descriptions stay, as the TypeScript's comments;
* a model that extends another of the document (`SweepView(SweepViewModel)`) is that one and its
  own fields (`allOf`), so the TypeScript says `ISweepViewModel & {figures: ...}` instead of
  repeating every field of the base;
* it is written in draft 7, the dialect json-schema-to-typescript reads: `definitions` for `$defs`,
  and a tuple's `prefixItems` as `items`;
* it is the same from every pydantic the package admits: pydantic 2.8 leaves the
  `additionalProperties: true` of a `dict[str, Any]` unsaid and writes no `propertyNames` for a
  dict keyed by a literal, later ones write both, in another order; the document says the first,
  not the second (TypeScript's index signature takes any string key either way), and each
  schema's keywords in sorted order (the fields stay in the model's order).

A request is described as the API reads it (validation), an answer as it is sent (serialization:
a field with a default may be absent, as `replies.dump` leaves it out when unset).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, models_json_schema

from . import TYPESCRIPT_ALIASES, TYPESCRIPT_NAMES
from .requests import Body

#: The command that writes the committed document (from the repository's root).
COMMAND = "python -m jupyter_px.server.models.schema labextension/src/types.schema.json"
#: Where the TypeScript's definitions are, in the document.
DEFINITIONS = "#/definitions/"


class _Generator(GenerateJsonSchema):
    """pydantic's JSON Schema without a title on each field (the models' titles are set below)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def _mode(model: type[BaseModel]) -> JsonSchemaMode:
    return "validation" if issubclass(model, Body) else "serialization"


def _for_typescript(value: Any, names: dict[str, str], aliases: dict[str, dict[str, Any]]) -> Any:
    """`value` in the document's terms: each `$ref` to the definition's TypeScript name, each
    literal of TYPESCRIPT_ALIASES a `$ref` to its definition (other keywords kept beside it), a
    tuple's `prefixItems` as draft 7's `items`."""
    if isinstance(value, list):
        return [_for_typescript(item, names, aliases) for item in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {
        key: {name: _for_typescript(field, names, aliases) for name, field in item.items()}
        if key == "properties"  # the fields, in the model's order
        else _for_typescript(item, names, aliases)
        for key, item in value.items()
    }
    ref = out.get("$ref")
    if isinstance(ref, str):
        out["$ref"] = DEFINITIONS + names[ref.rsplit("/", 1)[-1]]
    if "prefixItems" in out:
        out["items"] = out.pop("prefixItems")
    if out.get("type") == "object" and "properties" not in out:  # a dict: the same from every pydantic
        out.setdefault("additionalProperties", True)
        out.pop("propertyNames", None)
    for name, literal in aliases.items():
        if all(out.get(key) == item for key, item in literal.items()):
            out = {"$ref": DEFINITIONS + name, **{key: item for key, item in out.items() if key not in literal}}
    return dict(sorted(out.items()))  # keywords in one order, whichever pydantic wrote them


def _exported_base(model: type[BaseModel], mode: JsonSchemaMode) -> type[BaseModel] | None:
    """The model of the document `model` directly extends (read and written alike), if any."""
    base = model.__bases__[0]
    return base if base in TYPESCRIPT_NAMES and _mode(base) == mode else None


def _extending(definition: dict[str, Any], base: str, inherited: set[str]) -> dict[str, Any]:
    """A model's definition as its base's and its own fields: `{allOf: [base, own]}`."""
    own = {name: field for name, field in definition.pop("properties").items() if name not in inherited}
    required = [name for name in definition.pop("required", []) if name in own]
    rest = {key: item for key, item in definition.items() if key not in ("type", "additionalProperties")}
    extra = {key: item for key, item in definition.items() if key == "additionalProperties"}
    fields = {"properties": own, "type": "object", **extra, **({"required": required} if required else {})}
    return {**rest, "allOf": [{"$ref": DEFINITIONS + base}, dict(sorted(fields.items()))]}


def document() -> dict[str, Any]:
    """The JSON Schema document of every model of TYPESCRIPT_NAMES and every literal of
    TYPESCRIPT_ALIASES, each a definition under its TypeScript name; the document itself is any
    one of the models (json-schema-to-typescript declares a type for the document too)."""
    refs, schema = models_json_schema(
        [(model, _mode(model)) for model in TYPESCRIPT_NAMES], schema_generator=_Generator
    )
    models = {refs[(model, _mode(model))]["$ref"].rsplit("/", 1)[-1]: model for model in TYPESCRIPT_NAMES}
    unnamed = sorted(set(schema.get("$defs", {})) - set(models))
    if unnamed:
        raise ValueError(f"the REST models use {', '.join(unnamed)}: give each a TypeScript name in TYPESCRIPT_NAMES")
    names = {key: TYPESCRIPT_NAMES[model] for key, model in models.items()}
    aliases = {name: TypeAdapter(literal).json_schema() for name, literal in TYPESCRIPT_ALIASES.items()}
    definitions: dict[str, Any] = {name: {"title": name, **literal} for name, literal in aliases.items()}
    for key, model in models.items():
        definition = _for_typescript(schema["$defs"][key], names, aliases)
        del definition["title"]  # the class name: the TypeScript's name comes first instead
        base = _exported_base(model, _mode(model))
        if base is not None:
            definition = _extending(definition, TYPESCRIPT_NAMES[base], set(base.model_fields))
        said = definition.pop("description", None)
        source = f"`{model.__module__}.{model.__qualname__}`"
        definitions[names[key]] = {
            "title": names[key],
            "description": f"{said}\n\n{source}" if said else source,
            **definition,
        }
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$comment": f"Generated from the REST models by `{COMMAND}`: do not edit.",
        "title": "RestBody",
        "description": "Any body the REST API receives or sends: one of the interfaces below.",
        "anyOf": [{"$ref": DEFINITIONS + name} for name in TYPESCRIPT_NAMES.values()],
        "definitions": definitions,
    }


def text() -> str:
    """The document as it is committed: two-space indent, the fields in the models' order, a final newline."""
    return json.dumps(document(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(f"usage: {COMMAND.rsplit(' ', 1)[0]} OUT.json (or - for stdout)", file=sys.stderr)
        return 2
    if args[0] == "-":
        sys.stdout.write(text())
    else:
        Path(args[0]).write_text(text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
