"""Hyperband's and ASHA's fields: the resource a trial gets and how it is cut back.

Hyperband, the same in v0 (`hptuning.hyperband`) and v1 (`matrix: {kind: hyperband}`):
`max_iter` / `maxIterations` (the most resource a trial gets), `eta`, `resource: {name, type}`
(a parameter every trial gets), `metric` and `resume`
(docs/references/polyaxon-optimization-engine/hyperband.md in polyaxon/polyaxon). Without
`resume` (Polyaxon's default) a trial runs once with `max_iter` and Optuna's Hyperband pruner
stops it early; with `resume: true` brackets of trials run rung by rung and a trial kept for the
next rung continues from its checkpoint with more resource (`jupyter_px/sweeps/promotion.py`),
as Polyaxon's hyperband iteration manager resumes its experiments.

ASHA (asynchronous successive halving; ours, v0 `asha`, v1 `kind: asha`): the same fields plus
`n_experiments` / `numRuns` and `min_iter` / `minIterations` (the first rung, default 1);
Optuna's successive-halving pruner.
"""

from __future__ import annotations

from typing import Any

from ...topology.errors import Problem, show_value
from .fields import Fields, Search
from .models import MAX_TRIALS, Pruning, Resource
from .params import Param
from .sizes import count_trials, hyperband_trials, limit

#: The keys of v1's `matrix: {kind: hyperband}` (the section is also the algorithm's).
_V1_COMMON = {"kind", "params", "concurrency", "seed", "early_stopping", "metrics"}
_KEYS = {"max_iter", "eta", "resource", "metric"}


def read_hyperband(fields: Fields, section: dict[str, Any], path: str, params: dict[str, Param]) -> Search | None:
    fields.unknown(section, path, _KEYS | {"resume"} | ({"max_iterations"} | _V1_COMMON if fields.v1 else set()))
    max_iter, eta, metric, resource = _resource_fields(fields, section, path)
    resume = section.get("resume", False)
    if resume not in (None, False, True):
        fields.problems.append(Problem(f"{path}.resume", f"{show_value(resume)} is not true or false"))
    if max_iter is None or eta is None or resource is None:
        return None
    n = limit(fields, hyperband_trials(max_iter, eta), path)
    pruning = Pruning(kind="hyperband", max_resource=max_iter, reduction_factor=eta)
    # With resume: true the same schedule runs as brackets of trials, the kept ones resumed.
    return Search("hyperband", params, n, metric=metric, pruning=pruning, resource=resource, promote=resume is True)


def read_asha(fields: Fields, section: dict[str, Any], path: str, params: dict[str, Param]) -> Search | None:
    v1 = fields.v1
    extra = {"min_iter", "n_experiments"} if not v1 else {"min_iterations", "max_iterations", "num_runs"} | _V1_COMMON
    fields.unknown(section, path, _KEYS | extra)
    max_iter, eta, metric, resource = _resource_fields(fields, section, path)
    min_key, min_value = fields.get(section, "min_iterations" if v1 else "min_iter")
    min_iter = fields.whole(min_value, f"{path}.{min_key}", 1, 10**9) if min_key else 1
    if min_iter is not None and max_iter is not None and min_iter > max_iter:
        fields.problems.append(Problem(f"{path}.{min_key}", f"{min_iter} is above the most resource ({max_iter})"))
        min_iter = None
    runs_key, runs_value = fields.get(section, "num_runs" if v1 else "n_experiments")
    runs_path = f"{path}.{runs_key or ('numRuns' if v1 else 'n_experiments')}"
    if runs_key is None:
        fields.problems.append(Problem(runs_path, "required field is missing (how many trials to sample)"))
        return None
    requested = fields.whole(runs_value, runs_path, 1, MAX_TRIALS)
    n = count_trials(fields, "random", params, requested, runs_path, f"{path}.{'params' if v1 else 'matrix'}")
    if max_iter is None or eta is None or resource is None or min_iter is None:
        return None
    pruning = Pruning(kind="asha", max_resource=max_iter, min_resource=min_iter, reduction_factor=eta)
    return Search("asha", params, n, metric=metric, pruning=pruning, resource=resource)


def _resource_fields(
    fields: Fields, section: dict[str, Any], path: str
) -> tuple[int | None, int | None, Any, Resource | None]:
    """(max_iter, eta, the metric, the resource), each None with a problem when wrong."""
    v1, problems = fields.v1, fields.problems
    max_key, max_value = fields.get(section, "max_iterations" if v1 else "max_iter")
    if max_key is None and v1:
        max_key, max_value = fields.get(section, "max_iter")
    max_iter = None
    if max_key is None:
        problems.append(
            Problem(
                f"{path}.{'maxIterations' if v1 else 'max_iter'}",
                "required field is missing (the most steps a trial runs)",
            )
        )
    else:
        max_iter = fields.whole(max_value, f"{path}.{max_key}", 1, 10**9)
    eta = section.get("eta", 3)
    if isinstance(eta, float) and eta.is_integer():
        eta = int(eta)
    eta = fields.whole(eta, f"{path}.eta", 2, 1000)
    metric = fields.metric(section["metric"], f"{path}.metric") if "metric" in section else None
    resource = None
    raw_resource = section.get("resource")
    if raw_resource is None:
        problems.append(Problem(f"{path}.resource", "required field is missing: write {name: num_steps, type: int}"))
    elif not isinstance(raw_resource, dict) or not isinstance(raw_resource.get("name"), str):
        problems.append(
            Problem(
                f"{path}.resource",
                f"{show_value(raw_resource)} is not a resource: write {{name: num_steps, type: int}}",
            )
        )
    else:
        fields.unknown(raw_resource, f"{path}.resource", {"name", "type"})
        kind = raw_resource.get("type", "int")
        if kind not in ("int", "float"):
            problems.append(Problem(f"{path}.resource.type", f"{show_value(kind)} is not int or float"))
        elif max_iter is not None:
            resource = Resource(name=raw_resource["name"], type=kind, value=max_iter)
    return max_iter, eta, metric, resource
