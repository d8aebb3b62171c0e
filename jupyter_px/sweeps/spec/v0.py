"""Polyaxon v0's `hptuning:` search: `matrix` (the parameters) and one of `grid_search` /
`random_search` (`n_experiments`), `hyperband`, `bo` (`n_iterations`, `n_initial_trials`,
`metric`, `utility_function`); grid search when none is named
(docs/references/polyaxonfile-yaml-specification/hptuning.md in polyaxon/polyaxon). Ours, in the
same shape: `cmaes`, `nsga2` (`samplers.py`) and `asha` (`hyperband.py`)."""

from __future__ import annotations

from ...topology.errors import Problem, show_value
from .fields import Fields, Search
from .hyperband import read_asha, read_hyperband
from .models import MAX_TRIALS, Algorithm
from .samplers import read_bayes, read_cmaes, read_nsga2
from .sizes import count_trials

#: The keys of an `hptuning:` section.
KEYS = {
    "concurrency",
    "seed",
    "matrix",
    "metric",
    "metrics",
    "early_stopping",
    "grid_search",
    "random_search",
    "hyperband",
    "bo",
    "cmaes",
    "nsga2",
    "asha",
}
ALGORITHMS = ("grid_search", "random_search", "hyperband", "bo", "cmaes", "nsga2", "asha")
#: The readers of the other algorithms' sections.
_READERS = {"hyperband": read_hyperband, "bo": read_bayes, "cmaes": read_cmaes, "nsga2": read_nsga2, "asha": read_asha}


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
    return _READERS[name](fields, section, path, params)
