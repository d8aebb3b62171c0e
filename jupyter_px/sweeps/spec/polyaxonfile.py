"""A whole polyaxonfile: the job's topology (read by `jupyter_px.topology`) and its sweep section.

The topology package reads one job's shape and keeps a sweep section (`hptuning:`, `matrix:`)
as written, so the YAML round-trips; it does not know what a sweep is. Here the file is read
as both: every problem of the topology and of the sweep section is reported at once, each with
its path, as one `TopologyError`. Surfaces that accept a file which may hold a sweep (the
`%%px_topology` cell, `-f FILE`, `jupyter px validate`, the REST validation, `jupyter_px.sweep`)
read it here; `read_sweep` gives the validated sweep of a topology read either way.
"""

from __future__ import annotations

from typing import Any

from ...topology import Problem, Topology, TopologyError, load_yaml, parse_topology
from ...topology.values import command, missing_names, no_value_problem
from ...topology.yaml_text import check_document_size
from .models import SweepSpec
from .sections import SWEEP_KEYS, parse_sweep


def parse_polyaxonfile(source: str | dict | Topology | None) -> Topology:
    """`parse_topology`, with the sweep section validated too; TopologyError lists every problem."""
    if isinstance(source, Topology):
        read_sweep(source)
        return source
    if isinstance(source, dict):
        check_document_size(source)
    data = load_yaml(source) if isinstance(source, str) else source
    problems = sweep_problems(data) if isinstance(data, dict) else []
    try:
        topology = parse_topology(data)
    except TopologyError as error:
        raise TopologyError(error.problems + problems) from None
    if problems:
        raise TopologyError(problems)
    spec = read_sweep(topology)
    found = command(topology)
    if spec is not None and found is not None:
        missing = missing_names(found.args, value_names(topology, spec))
        if missing:
            raise TopologyError([no_value_problem("run.cmd", missing)])
    return topology


def value_names(topology: Topology, spec: SweepSpec) -> set[str]:
    """The names a trial has values for: the declarations, the parameters, Hyperband's resource."""
    names = set(topology.declarations or {}) | set(spec.params)
    if spec.mapping:
        names |= {name for row in spec.mapping for name in row}
    if spec.resource is not None:
        names.add(spec.resource.name)
    return names


def try_parse_polyaxonfile(source: Any) -> tuple[Topology | None, list[Problem]]:
    """For live validation: never raises."""
    try:
        return parse_polyaxonfile(source), []
    except TopologyError as error:
        return None, error.problems


def sweep_problems(data: dict[str, Any]) -> list[Problem]:
    """Every problem of the sweep sections (`hptuning`, `matrix`) of a document, each with its path."""
    sections = {key: data[key] for key in SWEEP_KEYS if key in data}
    if len(sections) > 1:
        return [Problem("matrix", "a polyaxonfile has one sweep: hptuning (Polyaxon v0) or matrix (v1), not both")]
    problems: list[Problem] = []
    for key, raw in sections.items():
        parse_sweep(key, raw, problems)
    return problems


def read_sweep(topology: Topology) -> SweepSpec | None:
    """The validated sweep of `topology`, or None for a topology of one run."""
    for key in SWEEP_KEYS:
        raw = getattr(topology, key)
        if raw is not None:
            problems: list[Problem] = []
            spec = parse_sweep(key, raw, problems)
            if spec is None:
                raise TopologyError(problems)
            return spec
    return None
