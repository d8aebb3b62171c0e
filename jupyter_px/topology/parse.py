"""Entry points: YAML text, a dict, or a model in; a validated `Topology` or `TopologyError` out."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from .dialects import normalize
from .errors import Problem, TopologyError, problems_from_validation, show_value
from .models import SECTIONS_KEPT_AS_WRITTEN, Topology
from .rules import check
from .v0_sections import read_v0_sections
from .yaml_text import check_document_size, load_yaml


def parse_topology(source: str | dict | Topology | None) -> Topology:
    """Validate a topology given as YAML text, a dict (any accepted form) or a model.

    Raises TopologyError listing every problem, each with its field path and value.
    """
    if isinstance(source, Topology):
        return source
    if isinstance(source, dict):
        check_document_size(source)  # text is held to it by load_yaml
    data = load_yaml(source) if isinstance(source, str) else source
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise TopologyError(
            [
                Problem(
                    "",
                    "a topology is a mapping of fields (framework, environment, ...), "
                    f"got {type(data).__name__} {show_value(data)}",
                )
            ]
        )
    # A sweep section is kept as written (the YAML round-trips); what it means is read by
    # `jupyter_px.sweeps.spec`, which reads a whole polyaxonfile through this function.
    sections = {key: data[key] for key in SECTIONS_KEPT_AS_WRITTEN if key in data}
    rest = {k: v for k, v in data.items() if k not in sections}
    v0 = read_v0_sections(rest, rest.get("backend", "local"))
    _fold_build(rest, v0.image, v0.env, v0.problems)
    normalized = normalize(rest)
    if normalized.problems:
        raise TopologyError(normalized.problems + v0.problems)
    try:
        topology = Topology.model_validate(normalized.data)
    except ValidationError as error:
        problems = problems_from_validation(error)
        raise TopologyError([Problem(normalized.rename(p.path), p.message) for p in problems] + v0.problems) from None
    problems = [Problem(normalized.rename(p.path), p.message) for p in check(topology)] + v0.problems
    if problems:
        raise TopologyError(problems)
    if sections or v0.kept:
        topology = topology.model_copy(update={**sections, **v0.kept})
    return topology


def _fold_build(data: dict[str, Any], image: str | None, env: dict[str, str], problems: list[Problem]) -> None:
    """Polyaxon v0's `build.image` and `build.env_vars` as the environment's `image` and `env`."""
    if image is None and not env:
        return
    environment = data.get("environment")
    if environment is None:
        environment = {}
    if not isinstance(environment, dict):
        return  # the environment's own problem is reported
    environment = dict(environment)
    if image is not None:
        if environment.get("image") not in (None, image):
            problems.append(Problem("build.image", "give either build.image or environment.image, not both"))
        environment["image"] = image
    if env:
        written = environment.get("env")
        given: dict[str, Any] = written if isinstance(written, dict) else {}
        clash = [name for name in env if name in given and str(given[name]) != env[name]]
        if clash:
            problems.append(Problem("build.env_vars", f"{clash[0]} is also set in environment.env: give it once"))
        environment["env"] = {**env, **given}
    data["environment"] = environment


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

    A framework other than the topology's starts from a fresh topology of that framework: the
    flags name a job, and the old one's roles (TensorFlow's ps), counts and resources belong to
    another. Its backend is kept when the new topology accepts it. A topology without a framework
    (the master's resources only) is kept, with the framework set. The result is validated like
    any other input; errors name the option's field.
    """
    from .export import to_dict

    data = to_dict(topology) if topology is not None else {}
    if framework is not None and topology is not None and topology.framework not in (None, framework):
        data = _fresh(framework, topology.backend)
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


def _fresh(framework: str, backend: str) -> dict[str, Any]:
    """A new topology of `framework`, on `backend` if that is valid for it."""
    data = {"framework": framework, "backend": backend}
    _, problems = try_parse(data)
    if any(problem.path == "backend" for problem in problems):
        del data["backend"]
    return data
