"""Validation errors that name the field path and the bad value.

Every way into a topology (YAML cell, widget, sidebar, REST, CLI) reports problems through
`TopologyError`, which carries all problems at once so a user fixes a file in one pass.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from .limits import MAX_SHOWN_CHARS


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
    """('environment', 'replicas', 'worker', 3, 'index') -> 'environment.replicas.worker[3].index'.

    Keys come from the user (an unknown key is part of its own path), so each is clipped."""
    out = ""
    for part in location:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "[key]":  # pydantic's marker for a bad mapping key: the key is the path's end
            continue
        else:
            name = str(part)
            if not name.isprintable():  # a NUL or newline in a key is shown, not printed
                name = name.encode("unicode_escape").decode("ascii")
            name = clip(name, MAX_SHOWN_CHARS // 2) or '""'
            out += f".{name}" if out else name
    return out


def clip(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """At most `limit` characters, '...' marking a cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _BoundedRepr(reprlib.Repr):
    """repr() that stops early: a value from a YAML bomb or a 100 MB string costs nothing to quote."""

    def __init__(self) -> None:
        super().__init__()  # keyword arguments only from Python 3.12
        self.maxlevel = 3
        self.maxdict = self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = 4
        self.maxstring = self.maxother = MAX_SHOWN_CHARS

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() <= 128:
            return repr(x)
        return f"a whole number of {_digits(x)} digits"  # repr() itself refuses past 4,300 digits


def _digits(number: int) -> int:
    number = abs(number)
    digits = max(1, int((number.bit_length() - 1) * math.log10(2)))
    while 10**digits <= number:
        digits += 1
    return digits


_REPR = _BoundedRepr()


def show_value(value: Any) -> str:
    """A user's value as error messages quote it: its repr, bounded in time and length."""
    return clip(_REPR.repr(value))


_BOUNDS = {
    "greater_than_equal": (">=", "ge"),
    "greater_than": (">", "gt"),
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
            message = f"unknown field (value {show_value(value)})"
        elif kind == "missing":
            message = "required field is missing"
        elif kind == "value_error" and "error" in ctx:
            message = str(ctx["error"])
        elif kind in ("literal_error", "enum"):
            message = f"{show_value(value)} is not one of {ctx.get('expected', '')}"
        elif kind == "less_than_equal":
            message = f"{show_value(value)} is above the maximum ({ctx.get('le')})"
        elif kind in _BOUNDS:
            symbol, key = _BOUNDS[kind]
            message = f"{show_value(value)} is not {symbol} {ctx.get(key)}"
        elif kind in ("int_parsing", "int_type", "int_from_float"):
            message = f"{show_value(value)} is not a whole number"
        elif kind in ("float_parsing", "float_type"):
            message = f"{show_value(value)} is not a number"
        elif kind in ("dict_type", "model_type", "model_attributes_type"):
            message = f"{show_value(value)} is not a mapping (expected fields under this key)"
        elif kind == "list_type":
            message = f"{show_value(value)} is not a list (expected '- index: ...' items)"
        elif kind == "string_type":
            message = f"{show_value(value)} is not a string"
        else:
            message = f"{show_value(value)} is not valid: {item['msg'][0].lower()}{item['msg'][1:]}"
        problems.append(Problem(path, message))
    return problems
