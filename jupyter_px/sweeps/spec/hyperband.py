"""Hyperband's fields, the same in v0 (`hptuning.hyperband`) and v1 (`matrix: {kind: hyperband}`):
`max_iter` / `maxIterations` (the most resource a trial gets), `eta`, `resource: {name, type}`
(a parameter every trial gets), `metric` and `resume`
(docs/references/polyaxon-optimization-engine/hyperband.md in polyaxon/polyaxon)."""

from __future__ import annotations

from typing import Any

from ...topology.errors import Problem, show_value
from .fields import Fields, Search
from .models import Pruning, Resource
from .params import Param
from .sizes import hyperband_trials, limit

#: The keys of v1's `matrix: {kind: hyperband}` (the section is also the algorithm's).
_V1_KEYS = {
    "max_iter",
    "max_iterations",
    "eta",
    "resource",
    "metric",
    "resume",
    "kind",
    "params",
    "concurrency",
    "seed",
    "early_stopping",
}
_V0_KEYS = {"max_iter", "eta", "resource", "metric", "resume"}


def read_hyperband(fields: Fields, section: dict[str, Any], path: str, params: dict[str, Param]) -> Search | None:
    v1, problems = fields.v1, fields.problems
    fields.unknown(section, path, _V1_KEYS if v1 else _V0_KEYS)
    max_key, max_value = fields.get(section, "max_iterations" if v1 else "max_iter")
    if max_key is None and v1:
        max_key, max_value = fields.get(section, "max_iter")
    if max_key is None:
        problems.append(
            Problem(
                f"{path}.{'maxIterations' if v1 else 'max_iter'}",
                "required field is missing (the most steps a trial runs)",
            )
        )
        return None
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
    if section.get("resume") not in (None, False):
        problems.append(
            Problem(
                f"{path}.resume",
                "true is not supported: Optuna's Hyperband stops a trial early "
                "instead of resuming it in a later bracket",
            )
        )
    if max_iter is None or eta is None or resource is None:
        return None
    n = limit(fields, hyperband_trials(max_iter, eta), path)
    pruning = Pruning(kind="hyperband", max_resource=max_iter, reduction_factor=eta)
    return Search("hyperband", params, n, metric=metric, pruning=pruning, resource=resource)
