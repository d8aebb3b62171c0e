"""A trial's values: each `Param` asked of an Optuna trial, then turned into the value the code gets.

Optuna has float, int and categorical distributions; Polyaxon's kinds are mapped onto them so
that every sampler (grid, random, TPE) and the study's storage see a plain search space:

* values, range, linspace, logspace, geomspace: categorical over the values (over their
  indices when a value is not a number, string, bool or null); the code gets the value.
* pvalues: a float u in [0, 1); the value whose cumulative probability first exceeds u (exact
  weighted sampling under random search).
* uniform / quniform: a float in [low, high]; quantized as round(x / q) * q.
* loguniform / qloguniform: a float in [exp(low), exp(high)] on a log scale; quantized.
* normal / qnormal: a float u in (0, 1); NormalDist(loc, scale).inv_cdf(u); quantized.
* lognormal / qlognormal: as normal, then exp(); quantized.

The inverse-CDF forms sample exactly the named distribution under random search; TPE models u.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

from .spec import Param, SweepSpec

#: Keeps u away from 0 and 1, where the inverse normal CDF is infinite.
_EDGE = 1e-12


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def grid_space(spec: SweepSpec) -> dict[str, list[Any]]:
    """The search space Optuna's GridSampler walks (every parameter is discrete in a grid)."""
    return {name: _choices(param) for name, param in spec.params.items()}


def _choices(param: Param) -> list[Any]:
    values = param.values or []
    return list(values) if all(_scalar(v) for v in values) else list(range(len(values)))


def _quantize(value: float, q: float | None) -> float:
    if q is None:
        return value
    return float(f"{round(value / q) * q:.12g}")


def suggest(trial: Any, spec: SweepSpec) -> dict[str, Any]:
    """Ask `trial` (an Optuna trial) for every parameter; the values the code gets, by name."""
    values: dict[str, Any] = {}
    for name, param in spec.params.items():
        values[name] = _suggest_one(trial, name, param)
    if spec.resource is not None:
        resource = spec.resource
        values[resource.name] = int(resource.value) if resource.type == "int" else float(resource.value)
    return values


def _suggest_one(trial: Any, name: str, param: Param) -> Any:
    kind = param.kind
    if param.discrete:
        choices = _choices(param)
        chosen = trial.suggest_categorical(name, choices)
        return chosen if choices is param.values or choices == param.values else (param.values or [])[chosen]
    if kind == "pvalues":
        u = trial.suggest_float(name, 0.0, 1.0)
        total = 0.0
        for value, probability in zip(param.values or [], param.probabilities or [], strict=True):
            total += probability
            if u < total:
                return value
        return (param.values or [None])[-1]
    if kind in ("uniform", "quniform"):
        return _quantize(trial.suggest_float(name, param.low, param.high), param.q)
    if kind in ("loguniform", "qloguniform"):
        low, high = math.exp(param.low or 0.0), math.exp(param.high or 0.0)
        return _quantize(trial.suggest_float(name, low, high, log=True), param.q)
    u = trial.suggest_float(name, _EDGE, 1.0 - _EDGE)
    x = NormalDist(param.loc or 0.0, param.scale or 1.0).inv_cdf(u)
    if kind in ("lognormal", "qlognormal"):
        x = math.exp(x)
    return _quantize(x, param.q)
