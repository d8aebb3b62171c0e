"""Reading the fields of one sweep section: each reader records what is wrong as a `Problem`
with its path from the document's root, and returns None for it, so that every problem of a
file is reported at once.

`Fields` holds the section being read (its key, `hptuning` or `matrix`, whether it is Polyaxon
v1, the problems and notes so far) and the small readers every part of the section uses: a
key written in snake_case or (v1) camelCase, a whole number in bounds, unknown keys, a metric.
`Search` is what an algorithm's reader (`v0.py`, `v1.py`, `hyperband.py`) found.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...topology.errors import Problem, show_value
from .models import Algorithm, Direction, Objective, Pruning, Resource
from .params import Param, parse_param


def camel(name: str) -> str:
    """`num_runs` -> `numRuns` (Polyaxon v1's spelling of the same key)."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def read_direction(value: Any, path: str, problems: list[Problem]) -> Direction | None:
    text = str(value).lower()
    if text in ("minimize", "min"):
        return "minimize"
    if text in ("maximize", "max"):
        return "maximize"
    problems.append(Problem(path, f"{show_value(value)} is not minimize or maximize"))
    return None


@dataclass
class Search:
    """What the algorithm's part of a section says: how trials are chosen and how many."""

    algorithm: Algorithm
    params: dict[str, Param]
    n_trials: int | None
    mapping: list[dict[str, Any]] | None = None
    metric: Objective | None = None  # the algorithm's own metric (hyperband, bo/bayes, hyperopt)
    pruning: Pruning | None = None
    resource: Resource | None = None
    startup: int | None = None  # bo/bayes, cmaes: random trials first
    promote: bool = False  # hyperband with resume: true
    options: dict[str, Any] = field(default_factory=dict)  # the sampler's own options


@dataclass
class Fields:
    """One section being read, and the readers of its fields."""

    key: str
    raw: dict[str, Any]
    problems: list[Problem]
    v1: bool
    notes: list[str] = field(default_factory=list)

    def get(self, mapping: dict[str, Any], name: str) -> tuple[str | None, Any]:
        """(the key as written, its value): snake_case or, in v1, camelCase."""
        for written in (name, camel(name)):
            if written in mapping:
                return written, mapping[written]
        return None, None

    def whole(self, value: Any, path: str, minimum: int, maximum: int) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.problems.append(Problem(path, f"{show_value(value)} is not a whole number"))
            return None
        if not minimum <= value <= maximum:
            self.problems.append(Problem(path, f"{value} is not between {minimum} and {maximum:,}"))
            return None
        return value

    def unknown(self, mapping: dict[str, Any], path: str, known: set[str]) -> None:
        known = known | {camel(k) for k in known}
        for name in mapping:
            if name not in known:
                self.problems.append(Problem(f"{path}.{name}", f"unknown field (value {show_value(mapping[name])})"))

    def direction(self, value: Any, path: str) -> Direction | None:
        return read_direction(value, path, self.problems)

    def metric(self, value: Any, path: str) -> Objective | None:
        if not isinstance(value, dict) or "name" not in value:
            self.problems.append(
                Problem(path, f"{show_value(value)} is not a metric: write {{name: loss, optimization: minimize}}")
            )
            return None
        self.unknown(value, path, {"name", "optimization"})
        direction = self.direction(value.get("optimization", "maximize"), f"{path}.optimization")
        if not isinstance(value["name"], str) or not value["name"]:
            self.problems.append(Problem(f"{path}.name", f"{show_value(value['name'])} is not a metric name"))
            return None
        return Objective(name=value["name"], direction=direction) if direction else None

    def metrics(self, value: Any, path: str) -> list[Objective] | None:
        """`metrics: [{name, optimization}, ...]`: the objectives of a multi-objective sweep."""
        if not isinstance(value, list) or not value:
            self.problems.append(
                Problem(
                    path,
                    f"{show_value(value)} is not a list of metrics: write "
                    "[{name: loss, optimization: minimize}, {name: throughput, optimization: maximize}]",
                )
            )
            return None
        before = len(self.problems)
        objectives = [self.metric(item, f"{path}[{i}]") for i, item in enumerate(value)]
        names = [o.name for o in objectives if o is not None]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            self.problems.append(Problem(path, f"{repeated[0]} is named twice: each metric is one objective"))
        if len(self.problems) > before:
            return None
        return [o for o in objectives if o is not None]

    def params(self, raw: Any, path: str) -> dict[str, Param]:
        """The parameters to search (v0 `matrix`, v1 `params`)."""
        if not isinstance(raw, dict) or not raw:
            self.problems.append(
                Problem(path, f"{show_value(raw)} is not a mapping of parameter names to their values")
            )
            return {}
        params = {}
        for name, value in raw.items():
            if not isinstance(name, str) or not name.isidentifier():
                self.problems.append(
                    Problem(
                        f"{path}.{name}",
                        "a parameter name must be a Python identifier (it becomes a global in the code)",
                    )
                )
                continue
            param = parse_param(value, f"{path}.{name}", self.problems, v1=self.v1)
            if param is not None:
                params[name] = param
        return params
