"""Validation errors that name the field path and the bad value.

Every way into a topology (YAML cell, widget, sidebar, REST, CLI) reports problems through
`TopologyError`, which carries all problems at once so a user fixes a file in one pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a topology: where (dotted path with [i]) and what."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


class TopologyError(ValueError):
    """A topology that does not validate. `problems` lists each one; str() lists them all."""

    def __init__(self, problems: Iterable[Problem]):
        self.problems = list(problems)
        super().__init__(self._render())

    def _render(self) -> str:
        if len(self.problems) == 1:
            return f"invalid topology: {self.problems[0]}"
        lines = [f"invalid topology ({len(self.problems)} problems):"]
        lines += [f"  - {problem}" for problem in self.problems]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"error": "invalid topology", "problems": [p.to_dict() for p in self.problems]}


def format_path(location: Iterable[Any]) -> str:
    """('environment', 'replicas', 'worker', 3, 'index') -> 'environment.replicas.worker[3].index'."""
    out = ""
    for part in location:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_BOUNDS = {
    "greater_than_equal": (">=", "ge"),
    "greater_than": (">", "gt"),
    "less_than_equal": ("<=", "le"),
    "less_than": ("<", "lt"),
}


def problems_from_validation(error: ValidationError, rename: dict[str, str] | None = None) -> list[Problem]:
    """Translate pydantic's errors into our wording: path, value, what was expected."""
    problems = []
    for item in error.errors(include_url=False):
        location = [p for p in item["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
        path = format_path(location)
        for old, new in (rename or {}).items():
            if path == old or path.startswith(old + ".") or path.startswith(old + "["):
                path = new + path[len(old) :]
        kind = item["type"]
        value = item.get("input")
        ctx = item.get("ctx") or {}
        if kind == "extra_forbidden":
            message = f"unknown field (value {_show(value)})"
        elif kind == "missing":
            message = "required field is missing"
        elif kind == "value_error" and "error" in ctx:
            message = str(ctx["error"])
        elif kind in ("literal_error", "enum"):
            message = f"{_show(value)} is not one of {ctx.get('expected', '')}"
        elif kind in _BOUNDS:
            symbol, key = _BOUNDS[kind]
            message = f"{_show(value)} is not {symbol} {ctx.get(key)}"
        elif kind in ("int_parsing", "int_type", "int_from_float"):
            message = f"{_show(value)} is not a whole number"
        elif kind in ("float_parsing", "float_type"):
            message = f"{_show(value)} is not a number"
        elif kind in ("dict_type", "model_type", "model_attributes_type"):
            message = f"{_show(value)} is not a mapping (expected fields under this key)"
        elif kind == "list_type":
            message = f"{_show(value)} is not a list (expected '- index: ...' items)"
        elif kind == "string_type":
            message = f"{_show(value)} is not a string"
        else:
            message = f"{_show(value)} is not valid: {item['msg'][0].lower()}{item['msg'][1:]}"
        problems.append(Problem(path, message))
    return problems
