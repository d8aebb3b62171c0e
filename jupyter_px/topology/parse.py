"""Entry points: YAML text, a dict, or a model in; a validated `Topology` or `TopologyError` out."""

from __future__ import annotations

import re
from typing import Any

import yaml
from pydantic import ValidationError

from .errors import Problem, TopologyError, problems_from_validation
from .dialects import normalize
from .models import Topology
from .rules import check

#: Polyaxon's docs elide parts of a file with `...` lines; in YAML that is a document end
#: marker, which would split or break the paste. Users paste the docs as written, so drop them.
_ELISION = re.compile(r"^[ \t]*\.\.\.[ \t]*$", re.MULTILINE)

#: libyaml's loader when PyYAML was built with it (10x faster on big topologies), same results.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """YAML text -> data, with `...` elisions removed; YAML syntax errors become TopologyError."""
    if not isinstance(text, str):
        raise TopologyError([Problem("", f"expected YAML text, got {type(text).__name__}")])
    try:
        return yaml.load(_ELISION.sub("", text), Loader=_LOADER)
    except yaml.YAMLError:
        pass
    try:  # the pure-Python loader words syntax errors better (and the same on every machine)
        return yaml.load(_ELISION.sub("", text), Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = getattr(error, "problem", None) or str(error)
        raise TopologyError([Problem("yaml", f"{where}{what}")]) from None


def parse_topology(source: str | dict | Topology | None) -> Topology:
    """Validate a topology given as YAML text, a dict (any accepted form) or a model.

    Raises TopologyError listing every problem, each with its field path and value.
    """
    if isinstance(source, Topology):
        return source
    data = load_yaml(source) if isinstance(source, str) else source
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise TopologyError(
            [
                Problem(
                    "",
                    f"a topology is a mapping of fields (framework, environment, ...), got {type(data).__name__} {data!r:.60}",
                )
            ]
        )
    normalized = normalize(data)
    if normalized.problems:
        raise TopologyError(normalized.problems)
    try:
        topology = Topology.model_validate(normalized.data)
    except ValidationError as error:
        problems = problems_from_validation(error)
        raise TopologyError([Problem(normalized.rename(p.path), p.message) for p in problems]) from None
    problems = check(topology)
    if problems:
        raise TopologyError([Problem(normalized.rename(p.path), p.message) for p in problems])
    return topology


def try_parse(source: Any) -> tuple[Topology | None, list[Problem]]:
    """For live validation (widget, sidebar): never raises."""
    try:
        return parse_topology(source), []
    except TopologyError as error:
        return None, error.problems


def apply_overrides(
    topology: Topology | None,
    *,
    framework: str | None = None,
    workers: int | None = None,
    ps: int | None = None,
    backend: str | None = None,
) -> Topology:
    """Command-line style overrides (`--framework pytorch --workers 3`) on top of a topology.

    The result is validated like any other input; errors name the option's field.
    """
    from .export import to_dict

    data = to_dict(topology) if topology is not None else {}
    if framework is not None:
        data["framework"] = framework
    if backend is not None:
        data["backend"] = backend
    if workers is not None or ps is not None:
        replicas = data.setdefault("environment", {}).setdefault("replicas", {})
        if workers is not None:
            replicas["n_workers"] = workers
        if ps is not None:
            replicas["n_ps"] = ps
    return parse_topology(data)
