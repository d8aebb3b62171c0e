"""The sweep section of a polyaxonfile: Polyaxon v0's `hptuning:` and v1's `matrix:`, read into
one `SweepSpec`.

What is read, as Polyaxon documents it:

* v0 `hptuning` (docs/references/polyaxonfile-yaml-specification/hptuning.md and
  docs/concepts/experiment-groups-hyperparameters-optimization.md in polyaxon/polyaxon):
  `seed`, `concurrency`, `matrix`, the search (`v0.py`), and
  `early_stopping: [{metric, value, optimization, policy}]` (`stopping.py`).
* v1 `matrix` (`v1.py`): `kind`, `params`, `concurrency`, `seed`, `earlyStopping`.

The objective (the metric a trial is judged by): the algorithm's own `metric` where Polyaxon
has one (hyperband, bo/bayes, hyperopt), else the first early-stopping metric, else our
addition `metric: {name, optimization}` (Polyaxon's own shape). An algorithm or a pruning
policy that needs one and has none is refused. Our `metrics: [{name, optimization}, ...]`
names two or more objectives: a multi-objective sweep, whose result is the trials' Pareto front;
only the searches that compare trials on several values take it (random, grid, bayes, tpe,
nsga2), and nothing prunes (a pruner ranks trials by one value).

Everything wrong is reported at once, each problem with its path from the document's root;
a grid larger than the trials asked for is said in `notes`.
"""

from __future__ import annotations

from typing import Any

from ...topology.errors import Problem, show_value
from .fields import Fields
from .models import MAX_CONCURRENCY, Algorithm, Objective, SweepSpec
from .sizes import grid_size
from .stopping import read_early_stopping
from .v0 import read_hptuning
from .v1 import read_matrix

#: The top-level keys of a sweep section: Polyaxon v0's and v1's.
SWEEP_KEYS = ("hptuning", "matrix")
#: The searches that take several objectives (Optuna's samplers for them).
MULTI_OBJECTIVE: tuple[Algorithm, ...] = ("random", "grid", "bayes", "tpe", "nsga2", "mapping")
#: The searches that need an objective, by name.
NEEDS_OBJECTIVE = {
    "hyperband": "Hyperband",
    "bayes": "Bayesian optimization",
    "tpe": "TPE (hyperopt)",
    "cmaes": "CMA-ES",
    "nsga2": "NSGA-II",
    "asha": "ASHA",
}


def parse_sweep(key: str, raw: Any, problems: list[Problem]) -> SweepSpec | None:
    """The section `key` ("hptuning" or "matrix") of a document; None with problems added when wrong."""
    before = len(problems)
    if not isinstance(raw, dict):
        problems.append(Problem(key, f"{show_value(raw)} is not a mapping (expected the sweep's fields under it)"))
        return None
    spec = _read(Fields(key, raw, problems, v1=key == "matrix"))
    return spec if len(problems) == before else None


def _read(fields: Fields) -> SweepSpec | None:
    key, raw, v1 = fields.key, fields.raw, fields.v1
    concurrency = 1
    if (written := fields.get(raw, "concurrency")[0]) is not None:
        concurrency = fields.whole(raw[written], f"{key}.{written}", 1, MAX_CONCURRENCY) or 1
    seed = None
    if "seed" in raw:
        seed = fields.whole(raw["seed"], f"{key}.seed", 0, 2**32 - 1)
    objective = None
    if "metric" in raw:  # our addition, in Polyaxon's shape
        objective = fields.metric(raw["metric"], f"{key}.metric")
    metrics = fields.metrics(raw["metrics"], f"{key}.metrics") if "metrics" in raw else None
    if metrics is not None and "metric" in raw:
        fields.problems.append(Problem(f"{key}.metrics", "give either metric or metrics, not both"))
    stopping = read_early_stopping(fields)
    search = read_matrix(fields) if v1 else read_hptuning(fields)
    if search is None:
        return None
    rules = stopping.rules
    first_rule = Objective(name=rules[0].metric, direction=rules[0].direction) if rules else None
    if metrics is not None and search.metric is not None:
        fields.problems.append(Problem(f"{key}.metrics", "give either the algorithm's metric or metrics, not both"))
    objective = search.metric or first_rule or stopping.policy_metric or objective
    objectives = metrics if metrics is not None else [objective] if objective else []
    pruning = search.pruning
    if stopping.policy is not None:
        if pruning is not None:
            fields.problems.append(
                Problem(
                    f"{key}.{'earlyStopping' if v1 else 'early_stopping'}",
                    "a stopping policy and hyperband both prune trials: choose one",
                )
            )
        pruning = stopping.policy
    algorithm = search.algorithm
    if len(objectives) > 1 and (algorithm not in MULTI_OBJECTIVE or pruning is not None):
        n = len(objectives)
        message = (
            f"{NEEDS_OBJECTIVE.get(algorithm, algorithm)} ranks trials by one metric; "
            f"with {n} objectives use random, grid, bayes (bo), tpe (hyperopt) or nsga2"
        )
        if algorithm in MULTI_OBJECTIVE and pruning is not None:
            message = f"pruning ({pruning.kind}) ranks trials by one metric: with {n} objectives remove the policy"
        fields.problems.append(Problem(f"{key}.metrics", message))
        return None
    needs = NEEDS_OBJECTIVE.get(algorithm)
    if not objectives and (needs or pruning is not None):
        what = needs or f"pruning ({pruning.kind if pruning else ''})"
        where = {"bayes": "bo" if not v1 else "metric", "hyperband": "hyperband" if not v1 else "metric"}
        fields.problems.append(
            Problem(
                f"{key}.{where.get(algorithm, 'metric')}",
                f"{what} needs an objective and none is given: add metric: {{name: loss, optimization: minimize}}",
            )
        )
        return None
    if search.n_trials is None:
        return None
    return SweepSpec(
        form="matrix" if v1 else "hptuning",
        algorithm=algorithm,
        params=search.params,
        mapping=search.mapping,
        n_trials=search.n_trials,
        concurrency=concurrency,
        objectives=objectives,
        pruning=pruning,
        promote=search.promote,
        stop_rules=rules,
        max_failure_percent=stopping.failure_percent,
        seed=seed,
        startup_trials=search.startup,
        sampler_options=search.options,
        resource=search.resource,
        grid_size=grid_size(search.params) if algorithm == "grid" else None,
        notes=fields.notes,
    )
