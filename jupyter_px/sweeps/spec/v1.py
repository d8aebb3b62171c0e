"""Polyaxon v1's `matrix:` search (the `V1GridSearch`, `V1RandomSearch`, `V1Hyperband`,
`V1Bayes`, `V1Hyperopt`, `V1Mapping` schemas): `kind: grid|random|hyperband|bayes|hyperopt|mapping`,
`params: {name: {kind, value}}`, `numRuns`, `numInitialRuns`, `maxIterations`, `algorithm`,
`values`; snake_case spellings of the same keys are read too. Also the names Katib users write
for the same algorithms (its `algorithmName`s: `bayesianoptimization`, `tpe`, `multivariate-tpe`,
`cmaes`; `random`, `grid`, `hyperband` are Polyaxon's too) and ours: `nsga2`, `asha`."""

from __future__ import annotations

from ...topology.errors import Problem, show_value
from .fields import Fields, Search
from .hyperband import read_asha, read_hyperband
from .models import MAX_TRIALS
from .samplers import read_bayes, read_cmaes, read_katib_tpe, read_nsga2
from .sizes import count_trials, limit

KINDS = (
    "grid",
    "random",
    "hyperband",
    "bayes",
    "hyperopt",
    "mapping",
    "cmaes",
    "nsga2",
    "asha",
    "bayesianoptimization",
    "tpe",
    "multivariate-tpe",
)
#: The keys every kind takes.
COMMON = {"kind", "concurrency", "seed", "early_stopping", "metric", "metrics"}
#: Readers of the kinds whose fields are shared with v0 (the section is the algorithm's).
_READERS = {
    "hyperband": read_hyperband,
    "bayes": read_bayes,
    "bayesianoptimization": read_bayes,
    "cmaes": read_cmaes,
    "nsga2": read_nsga2,
    "asha": read_asha,
}


def read_matrix(fields: Fields) -> Search | None:
    key, raw, problems = fields.key, fields.raw, fields.problems
    kind = raw.get("kind")
    if kind not in KINDS:
        message = "required field is missing" if kind is None else f"{show_value(kind)} is not supported"
        if kind == "iterative":
            message = "iterative needs Polyaxon's own tuner container"
        problems.append(Problem(f"{key}.kind", f"{message}: use one of {', '.join(KINDS)}"))
        return None
    if kind == "mapping":
        return _mapping(fields)
    if "params" not in raw:
        problems.append(Problem(f"{key}.params", "required field is missing (the parameters to search)"))
        return None
    params = fields.params(raw["params"], f"{key}.params")
    if kind in _READERS:
        return _READERS[kind](fields, raw, key, params)
    if kind in ("tpe", "multivariate-tpe"):
        return read_katib_tpe(fields, kind, params)
    if kind in ("grid", "random"):
        fields.unknown(raw, key, COMMON | {"params", "num_runs"})
        written, value = fields.get(raw, "num_runs")
        requested = fields.whole(value, f"{key}.{written}", 1, MAX_TRIALS) if written else None
        if written is None and kind == "random":
            problems.append(Problem(f"{key}.numRuns", "required field is missing (how many trials to sample)"))
        n = count_trials(fields, kind, params, requested, f"{key}.{written or 'numRuns'}", f"{key}.params")
        return Search(kind, params, n)
    metric = fields.metric(raw["metric"], f"{key}.metric") if "metric" in raw else None
    fields.unknown(raw, key, COMMON | {"params", "num_runs", "max_iterations", "algorithm"})
    algorithm = raw.get("algorithm", "tpe")
    if algorithm not in ("tpe", "rand"):
        problems.append(
            Problem(f"{key}.algorithm", f"{show_value(algorithm)} has no Optuna sampler here; use tpe or rand")
        )
        return None
    written, value = fields.get(raw, "num_runs")
    if written is None:
        problems.append(Problem(f"{key}.numRuns", "required field is missing (how many trials to run)"))
        return None
    n = fields.whole(value, f"{key}.{written}", 1, MAX_TRIALS)
    if algorithm == "rand":
        n = count_trials(fields, "random", params, n, f"{key}.{written}", f"{key}.params")
        return Search("random", params, n, metric=metric)
    return Search("tpe", params, n, metric=metric)


def _mapping(fields: Fields) -> Search | None:
    """`kind: mapping`: trial i gets `values[i]`, nothing is sampled."""
    key, raw, problems = fields.key, fields.raw, fields.problems
    fields.unknown(raw, key, COMMON | {"values"})
    values = raw.get("values")
    if not isinstance(values, list) or not values or not all(isinstance(v, dict) for v in values):
        problems.append(
            Problem(f"{key}.values", f"{show_value(values)} is not a non-empty list of mappings of parameter values")
        )
        return None
    for i, row in enumerate(values):
        bad = [n for n in row if not isinstance(n, str) or not n.isidentifier()]
        if bad:
            problems.append(Problem(f"{key}.values[{i}].{bad[0]}", "a parameter name must be a Python identifier"))
    n = limit(fields, len(values), f"{key}.values")
    return Search("mapping", {}, n, mapping=values)
