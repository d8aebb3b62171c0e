"""Polyaxon v0's `hptuning:` search: `matrix` (the parameters) and one of `grid_search` /
`random_search` (`n_experiments`), `hyperband`, `bo` (`n_iterations`, `n_initial_trials`,
`metric`, `utility_function`); grid search when none is named
(docs/references/polyaxonfile-yaml-specification/hptuning.md in polyaxon/polyaxon)."""

from __future__ import annotations

from ...topology.errors import Problem, show_value
from .fields import Fields, Search
from .hyperband import read_hyperband
from .models import MAX_TRIALS, Algorithm
from .sizes import count_trials, limit

#: The keys of an `hptuning:` section.
KEYS = {
    "concurrency",
    "seed",
    "matrix",
    "metric",
    "early_stopping",
    "grid_search",
    "random_search",
    "hyperband",
    "bo",
}
ALGORITHMS = ("grid_search", "random_search", "hyperband", "bo")


def read_hptuning(fields: Fields) -> Search | None:
    key, raw, problems = fields.key, fields.raw, fields.problems
    fields.unknown(raw, key, KEYS)
    algorithms = [name for name in ALGORITHMS if name in raw]
    if len(algorithms) > 1:
        problems.append(Problem(key, f"give one search algorithm, not {', '.join(algorithms)}"))
        return None
    if "matrix" not in raw:
        problems.append(Problem(f"{key}.matrix", "required field is missing (the parameters to search)"))
        return None
    params = fields.params(raw["matrix"], f"{key}.matrix")
    name = algorithms[0] if algorithms else "grid_search"
    section = raw.get(name) or {}
    path = f"{key}.{name}"
    if not isinstance(section, dict):
        problems.append(Problem(path, f"{show_value(section)} is not a mapping"))
        return None
    if name in ("grid_search", "random_search"):
        fields.unknown(section, path, {"n_experiments"})
        requested = None
        if "n_experiments" in section:
            requested = fields.whole(section["n_experiments"], f"{path}.n_experiments", 1, MAX_TRIALS)
        elif name == "random_search":
            problems.append(Problem(f"{path}.n_experiments", "required field is missing (how many trials to sample)"))
        algorithm: Algorithm = "grid" if name == "grid_search" else "random"
        n = count_trials(fields, algorithm, params, requested, f"{path}.n_experiments", f"{key}.matrix")
        return Search(algorithm, params, n)
    if name == "hyperband":
        return read_hyperband(fields, section, path, params)
    fields.unknown(section, path, {"n_iterations", "n_initial_trials", "metric", "utility_function"})
    metric = fields.metric(section["metric"], f"{path}.metric") if "metric" in section else None
    initial = fields.whole(section.get("n_initial_trials", 10), f"{path}.n_initial_trials", 1, MAX_TRIALS)
    iterations = fields.whole(section.get("n_iterations", 10), f"{path}.n_iterations", 0, MAX_TRIALS)
    if "utility_function" in section:
        fields.notes.append("bo.utility_function is not used: Optuna's TPE sampler chooses the next trial")
    n = None if initial is None or iterations is None else limit(fields, initial + iterations, path)
    return Search("bayes", params, n, metric=metric, startup=initial)
