"""Rules that need the whole topology: index bounds, duplicates, roles a framework has.

Field-level checks (types, units, requests <= limits, unknown fields) live on the models; these
run once the structure is valid and report every violation, each with its path and value.
"""

from __future__ import annotations

from .. import backend_table
from .errors import Problem
from .limits import MAX_TOTAL_REPLICAS
from .models import FRAMEWORK_ROLES, MASTER_REQUIRED, Topology

_COUNT_FIELD = {"master": "n_masters", "worker": "n_workers", "ps": "n_ps", "evaluator": "n_evaluators"}


def check(topology: Topology) -> list[Problem]:
    problems: list[Problem] = []
    section = topology.replicas_section
    prefix = "environment.replicas"
    framework = topology.framework
    allowed = FRAMEWORK_ROLES[framework]

    for role in ("worker", "ps", "evaluator"):
        count_field = _COUNT_FIELD[role]
        count = section.count(role)
        if role not in allowed:
            if count:
                problems.append(Problem(f"{prefix}.{count_field}", _role_not_allowed(count, role, framework)))
            if section.overrides(role):
                problems.append(
                    Problem(f"{prefix}.{role}", f"{framework or 'a job without a framework'} has no {role} replicas")
                )
            continue
        seen: set[int] = set()
        for position, override in enumerate(section.overrides(role)):
            path = f"{prefix}.{role}[{position}].index"
            if override.index >= count:
                problems.append(Problem(path, f"{override.index} is not below {count_field} ({count})"))
            if override.index in seen:
                problems.append(Problem(path, f"{override.index} is given more than once"))
            seen.add(override.index)

    if section.n_masters == 0 and framework in MASTER_REQUIRED:
        role_name = "scheduler" if framework == "mxnet" else "launcher"
        problems.append(
            Problem(f"{prefix}.n_masters", f"0 is not allowed: {framework} needs its master (the {role_name})")
        )
    if section.n_masters == 0 and section.n_workers == 0:
        problems.append(Problem(f"{prefix}.n_workers", "0: a job with no master needs at least one worker"))
    total = topology.total_replicas()
    if total > MAX_TOTAL_REPLICAS:
        counts = ", ".join(f"{role} {n}" for role, n in topology.counts().items())
        problems.append(
            Problem(prefix, f"{total} replicas in all ({counts}) is above the maximum ({MAX_TOTAL_REPLICAS})")
        )
    termination = topology.termination
    if termination is not None and termination.max_retries and not backend_table.entry(topology.backend).retries_runs:
        able = ", ".join(e.name for e in backend_table.BACKENDS if e.retries_runs)
        elsewhere = backend_table.entry(topology.backend).retries_elsewhere
        problems.append(
            Problem(
                "termination.max_retries",
                f"{termination.max_retries}: the {topology.backend_kind} backend does not start a run again yet "
                f"(backends that do: {able})" + (f"; on it, {elsewhere}" if elsewhere else ""),
            )
        )
    problems += _elastic_problems(topology)
    processes = topology.environment.processes_per_replica
    if processes > 1 and framework in ("tensorflow", "mxnet"):
        problems.append(
            Problem(
                "environment.processes_per_replica",
                f"{processes} is not supported for {framework} (one process per replica)",
            )
        )
    return problems


def _role_not_allowed(count: int, role: str, framework: str | None) -> str:
    if framework is None:
        return f"{count} {role} replicas need a framework (set framework: tensorflow, pytorch, mxnet or horovod)"
    roles = ", ".join(FRAMEWORK_ROLES[framework])
    return f"{count} is not allowed: {framework} has no {role} replicas (roles: {roles})"


def _elastic_problems(topology: Topology) -> list[Problem]:
    """Elastic workers (`n_workers: "MIN:MAX"`): PyTorch's (torchrun `--nnodes=MIN:MAX`), with the
    master, which holds the rendezvous, and on a backend that re-forms a run's gang."""
    section = topology.replicas_section
    low = section.min_workers
    if low is None:
        return []
    path, shown = "environment.replicas.n_workers", f"'{low}:{section.n_workers}'"
    if not 1 <= low <= section.n_workers:
        return [Problem(path, f"{shown}: the minimum must be at least 1 and at most the maximum")]
    if topology.framework != "pytorch":
        return [Problem(path, f"{shown}: elastic workers are for PyTorch (torchrun's --nnodes=MIN:MAX)")]
    if section.n_masters == 0:
        return [Problem(path, f"{shown}: elastic workers need the master (n_masters: 1), which holds the rendezvous")]
    if not backend_table.entry(topology.backend).elastic_workers:
        able = ", ".join(e.name for e in backend_table.BACKENDS if e.elastic_workers)
        return [
            Problem(
                path,
                f"{shown}: the {topology.backend_kind} backend does not run elastic workers yet "
                f"(backends that do: {able})",
            )
        ]
    return []
