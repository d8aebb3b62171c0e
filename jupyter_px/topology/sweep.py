"""The sweep section of a polyaxonfile: Polyaxon v0's `hptuning:` and v1's `matrix:`, read into
one `SweepSpec`.

What is read, as Polyaxon documents it:

* v0 `hptuning` (docs/references/polyaxonfile-yaml-specification/hptuning.md and
  docs/concepts/experiment-groups-hyperparameters-optimization.md in polyaxon/polyaxon):
  `seed`, `concurrency`, `matrix`, one of `grid_search`/`random_search` (`n_experiments`),
  `hyperband` (`max_iter`, `eta`, `resource: {name, type}`, `metric: {name, optimization}`,
  `resume`), `bo` (`n_iterations`, `n_initial_trials`, `metric`, `utility_function`), and
  `early_stopping: [{metric, value, optimization, policy}]`.
* v1 `matrix` (the `V1GridSearch`, `V1RandomSearch`, `V1Hyperband`, `V1Bayes`, `V1Hyperopt`,
  `V1Mapping` schemas): `kind: grid|random|hyperband|bayes|hyperopt|mapping`, `params:
  {name: {kind, value}}`, `numRuns`, `maxIterations`, `eta`, `resource`, `metric`, `resume`,
  `numInitialRuns`, `algorithm`, `values`, `concurrency`, `seed`, `earlyStopping:
  [{kind: metric_early_stopping, metric, value, optimization, policy} | {kind:
  failure_early_stopping, percent}]`. snake_case spellings of the same keys are read too.

The objective (the metric a trial is judged by): the algorithm's own `metric` where Polyaxon
has one (hyperband, bo/bayes, hyperopt), else the first early-stopping metric, else our
addition `metric: {name, optimization}` (Polyaxon's own shape). An algorithm or a pruning
policy that needs one and has none is refused. Early-stopping entries with a `value` stop the
whole sweep once a finished trial reaches it (Polyaxon's rule); their `policy` (median,
truncation) prunes trials while they run.

Everything wrong is reported at once, each problem with its path from the document's root;
a grid larger than the trials asked for is said in `notes`, and a space with fewer distinct
points than the trials asked for is refused (polyaxon/polyaxon#193: such a group sampled forever).
"""

from __future__ import annotations

import math
from typing import Any

from .errors import Problem, show_value
from .sweep_params import Param, parse_param
from .sweep_spec import (
    MAX_CONCURRENCY,
    MAX_TRIALS,
    Algorithm,
    Direction,
    Objective,
    Pruning,
    Resource,
    StopRule,
    SweepSpec,
)

SWEEP_KEYS = ("hptuning", "matrix")


def parse_sweep(key: str, raw: Any, problems: list[Problem]) -> SweepSpec | None:
    """The section `key` ("hptuning" or "matrix") of a document; None with problems added when wrong."""
    before = len(problems)
    if not isinstance(raw, dict):
        problems.append(Problem(key, f"{show_value(raw)} is not a mapping (expected the sweep's fields under it)"))
        return None
    reader = _Reader(key, raw, problems, v1=key == "matrix")
    spec = reader.read()
    return spec if len(problems) == before else None


def _direction(value: Any, path: str, problems: list[Problem]) -> Direction | None:
    text = str(value).lower()
    if text in ("minimize", "min"):
        return "minimize"
    if text in ("maximize", "max"):
        return "maximize"
    problems.append(Problem(path, f"{show_value(value)} is not minimize or maximize"))
    return None


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


class _Reader:
    """Reads one section; each `_field` call marks a key as known, the rest are unknown fields."""

    def __init__(self, key: str, raw: dict[str, Any], problems: list[Problem], *, v1: bool):
        self.key, self.raw, self.problems, self.v1 = key, raw, problems, v1
        self.notes: list[str] = []
        self.policy_metric: Objective | None = None
        self.startup: int | None = None

    # ---- small readers -----------------------------------------------------------------------
    def _get(self, mapping: dict[str, Any], name: str) -> tuple[str | None, Any]:
        """(the key as written, its value): snake_case or, in v1, camelCase."""
        for written in (name, _camel(name)):
            if written in mapping:
                return written, mapping[written]
        return None, None

    def _whole(self, value: Any, path: str, minimum: int, maximum: int) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.problems.append(Problem(path, f"{show_value(value)} is not a whole number"))
            return None
        if not minimum <= value <= maximum:
            self.problems.append(Problem(path, f"{value} is not between {minimum} and {maximum:,}"))
            return None
        return value

    def _unknown(self, mapping: dict[str, Any], path: str, known: set[str]) -> None:
        known = known | {_camel(k) for k in known}
        for name in mapping:
            if name not in known:
                self.problems.append(Problem(f"{path}.{name}", f"unknown field (value {show_value(mapping[name])})"))

    def _metric(self, value: Any, path: str) -> Objective | None:
        if not isinstance(value, dict) or "name" not in value:
            self.problems.append(
                Problem(path, f"{show_value(value)} is not a metric: write {{name: loss, optimization: minimize}}")
            )
            return None
        self._unknown(value, path, {"name", "optimization"})
        direction = _direction(value.get("optimization", "maximize"), f"{path}.optimization", self.problems)
        if not isinstance(value["name"], str) or not value["name"]:
            self.problems.append(Problem(f"{path}.name", f"{show_value(value['name'])} is not a metric name"))
            return None
        return Objective(name=value["name"], direction=direction) if direction else None

    # ---- the section ---------------------------------------------------------------------------
    def read(self) -> SweepSpec | None:
        key, raw = self.key, self.raw
        concurrency = 1
        if (written := self._get(raw, "concurrency")[0]) is not None:
            concurrency = self._whole(raw[written], f"{key}.{written}", 1, MAX_CONCURRENCY) or 1
        seed = None
        if "seed" in raw:
            seed = self._whole(raw["seed"], f"{key}.seed", 0, 2**32 - 1)
        objective = None
        if "metric" in raw:  # our addition, in Polyaxon's shape
            objective = self._metric(raw["metric"], f"{key}.metric")
        stop_rules, policy, failure = self._early_stopping()
        if self.v1:
            algorithm, params, mapping, n_trials, own_metric, pruning, resource = self._v1(raw)
        else:
            algorithm, params, mapping, n_trials, own_metric, pruning, resource = self._v0(raw)
        if algorithm is None:
            return None
        first_rule = Objective(name=stop_rules[0].metric, direction=stop_rules[0].direction) if stop_rules else None
        objective = own_metric or first_rule or self.policy_metric or objective
        if policy is not None:
            if pruning is not None:
                self.problems.append(
                    Problem(
                        f"{key}.{'earlyStopping' if self.v1 else 'early_stopping'}",
                        "a stopping policy and hyperband both prune trials: choose one",
                    )
                )
            pruning = policy
        needs = {"hyperband": "Hyperband", "bayes": "Bayesian optimization", "tpe": "TPE (hyperopt)"}.get(algorithm)
        if objective is None and (needs or pruning is not None):
            what = needs or f"pruning ({pruning.kind if pruning else ''})"
            where = {"bayes": "bo" if not self.v1 else "metric", "hyperband": "hyperband" if not self.v1 else "metric"}
            self.problems.append(
                Problem(
                    f"{key}.{where.get(algorithm, 'metric')}",
                    f"{what} needs an objective and none is given: add metric: {{name: loss, optimization: minimize}}",
                )
            )
            return None
        if n_trials is None:
            return None
        return SweepSpec(
            form="matrix" if self.v1 else "hptuning",
            algorithm=algorithm,
            params=params,
            mapping=mapping,
            n_trials=n_trials,
            concurrency=concurrency,
            objective=objective,
            pruning=pruning,
            stop_rules=stop_rules,
            max_failure_percent=failure,
            seed=seed,
            startup_trials=self.startup,
            resource=resource,
            grid_size=_grid_size(params) if algorithm == "grid" else None,
            notes=self.notes,
        )

    def _params(self, raw: Any, path: str) -> dict[str, Param]:
        if not isinstance(raw, dict) or not raw:
            self.problems.append(
                Problem(path, f"{show_value(raw)} is not a mapping of parameter names to their values")
            )
            return {}
        params = {}
        for name, value in raw.items():
            if not isinstance(name, str) or not name.isidentifier():
                self.problems.append(
                    Problem(
                        f"{path}.{name}",
                        "a parameter name must be a Python identifier (it becomes a global in the code)",
                    )
                )
                continue
            param = parse_param(value, f"{path}.{name}", self.problems, v1=self.v1)
            if param is not None:
                params[name] = param
        return params

    def _v0(self, raw: dict[str, Any]):
        key = self.key
        self._unknown(
            raw,
            key,
            {
                "concurrency",
                "seed",
                "matrix",
                "metric",
                "early_stopping",
                "grid_search",
                "random_search",
                "hyperband",
                "bo",
            },
        )
        algorithms = [name for name in ("grid_search", "random_search", "hyperband", "bo") if name in raw]
        if len(algorithms) > 1:
            self.problems.append(Problem(key, f"give one search algorithm, not {', '.join(algorithms)}"))
            return (None,) * 7
        if "matrix" not in raw:
            self.problems.append(Problem(f"{key}.matrix", "required field is missing (the parameters to search)"))
            return (None,) * 7
        params = self._params(raw["matrix"], f"{key}.matrix")
        name = algorithms[0] if algorithms else "grid_search"
        section = raw.get(name) or {}
        path = f"{key}.{name}"
        if not isinstance(section, dict):
            self.problems.append(Problem(path, f"{show_value(section)} is not a mapping"))
            return (None,) * 7
        if name in ("grid_search", "random_search"):
            self._unknown(section, path, {"n_experiments"})
            requested = None
            if "n_experiments" in section:
                requested = self._whole(section["n_experiments"], f"{path}.n_experiments", 1, MAX_TRIALS)
            elif name == "random_search":
                self.problems.append(
                    Problem(f"{path}.n_experiments", "required field is missing (how many trials to sample)")
                )
            algorithm: Algorithm = "grid" if name == "grid_search" else "random"
            n = self._count(algorithm, params, requested, f"{path}.n_experiments", f"{key}.matrix")
            return algorithm, params, None, n, None, None, None
        if name == "hyperband":
            return self._hyperband(section, path, params, v1=False)
        self._unknown(section, path, {"n_iterations", "n_initial_trials", "metric", "utility_function"})
        metric = self._metric(section["metric"], f"{path}.metric") if "metric" in section else None
        initial = self._whole(section.get("n_initial_trials", 10), f"{path}.n_initial_trials", 1, MAX_TRIALS)
        iterations = self._whole(section.get("n_iterations", 10), f"{path}.n_iterations", 0, MAX_TRIALS)
        if "utility_function" in section:
            self.notes.append("bo.utility_function is not used: Optuna's TPE sampler chooses the next trial")
        n = None if initial is None or iterations is None else self._limit(initial + iterations, path)
        self.startup = initial
        return "bayes", params, None, n, metric, None, None

    def _hyperband(self, section: dict[str, Any], path: str, params: dict[str, Param], *, v1: bool):
        self._unknown(
            section,
            path,
            {
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
            if v1
            else {"max_iter", "eta", "resource", "metric", "resume"},
        )
        max_key, max_value = self._get(section, "max_iterations" if v1 else "max_iter")
        if max_key is None and v1:
            max_key, max_value = self._get(section, "max_iter")
        if max_key is None:
            self.problems.append(
                Problem(
                    f"{path}.{'maxIterations' if v1 else 'max_iter'}",
                    "required field is missing (the most steps a trial runs)",
                )
            )
            return (None,) * 7
        max_iter = self._whole(max_value, f"{path}.{max_key}", 1, 10**9)
        eta = section.get("eta", 3)
        if isinstance(eta, float) and eta.is_integer():
            eta = int(eta)
        eta = self._whole(eta, f"{path}.eta", 2, 1000)
        metric = self._metric(section["metric"], f"{path}.metric") if "metric" in section else None
        resource = None
        raw_resource = section.get("resource")
        if raw_resource is None:
            self.problems.append(
                Problem(f"{path}.resource", "required field is missing: write {name: num_steps, type: int}")
            )
        elif not isinstance(raw_resource, dict) or not isinstance(raw_resource.get("name"), str):
            self.problems.append(
                Problem(
                    f"{path}.resource",
                    f"{show_value(raw_resource)} is not a resource: write {{name: num_steps, type: int}}",
                )
            )
        else:
            self._unknown(raw_resource, f"{path}.resource", {"name", "type"})
            kind = raw_resource.get("type", "int")
            if kind not in ("int", "float"):
                self.problems.append(Problem(f"{path}.resource.type", f"{show_value(kind)} is not int or float"))
            elif max_iter is not None:
                resource = Resource(name=raw_resource["name"], type=kind, value=max_iter)
        if section.get("resume") not in (None, False):
            self.problems.append(
                Problem(
                    f"{path}.resume",
                    "true is not supported: Optuna's Hyperband stops a trial early "
                    "instead of resuming it in a later bracket",
                )
            )
        if max_iter is None or eta is None or resource is None:
            return (None,) * 7
        n = self._limit(hyperband_trials(max_iter, eta), path)
        pruning = Pruning(kind="hyperband", max_resource=max_iter, reduction_factor=eta)
        return "hyperband", params, None, n, metric, pruning, resource

    def _v1(self, raw: dict[str, Any]):
        key = self.key
        kind = raw.get("kind")
        kinds = ("grid", "random", "hyperband", "bayes", "hyperopt", "mapping")
        if kind not in kinds:
            message = "required field is missing" if kind is None else f"{show_value(kind)} is not supported"
            if kind == "iterative":
                message = "iterative needs Polyaxon's own tuner container"
            self.problems.append(Problem(f"{key}.kind", f"{message}: use one of {', '.join(kinds)}"))
            return (None,) * 7
        common = {"kind", "concurrency", "seed", "early_stopping", "metric"}
        if kind == "mapping":
            self._unknown(raw, key, common | {"values"})
            values = raw.get("values")
            if not isinstance(values, list) or not values or not all(isinstance(v, dict) for v in values):
                self.problems.append(
                    Problem(
                        f"{key}.values", f"{show_value(values)} is not a non-empty list of mappings of parameter values"
                    )
                )
                return (None,) * 7
            for i, row in enumerate(values):
                bad = [n for n in row if not isinstance(n, str) or not n.isidentifier()]
                if bad:
                    self.problems.append(
                        Problem(f"{key}.values[{i}].{bad[0]}", "a parameter name must be a Python identifier")
                    )
            n = self._limit(len(values), f"{key}.values")
            return "mapping", {}, values, n, None, None, None
        if "params" not in raw:
            self.problems.append(Problem(f"{key}.params", "required field is missing (the parameters to search)"))
            return (None,) * 7
        params = self._params(raw["params"], f"{key}.params")
        if kind == "hyperband":
            return self._hyperband(raw, key, params, v1=True)
        if kind in ("grid", "random"):
            self._unknown(raw, key, common | {"params", "num_runs"})
            written, value = self._get(raw, "num_runs")
            requested = self._whole(value, f"{key}.{written}", 1, MAX_TRIALS) if written else None
            if written is None and kind == "random":
                self.problems.append(Problem(f"{key}.numRuns", "required field is missing (how many trials to sample)"))
            n = self._count(kind, params, requested, f"{key}.{written or 'numRuns'}", f"{key}.params")
            return kind, params, None, n, None, None, None
        metric = self._metric(raw["metric"], f"{key}.metric") if "metric" in raw else None
        if kind == "bayes":
            self._unknown(raw, key, common | {"params", "num_initial_runs", "max_iterations", "utility_function"})
            initial = self._whole(self._get(raw, "num_initial_runs")[1] or 10, f"{key}.numInitialRuns", 1, MAX_TRIALS)
            iterations = self._whole(self._get(raw, "max_iterations")[1] or 10, f"{key}.maxIterations", 0, MAX_TRIALS)
            if self._get(raw, "utility_function")[0]:
                self.notes.append("utilityFunction is not used: Optuna's TPE sampler chooses the next trial")
            n = None if initial is None or iterations is None else self._limit(initial + iterations, key)
            self.startup = initial
            return "bayes", params, None, n, metric, None, None
        self._unknown(raw, key, common | {"params", "num_runs", "max_iterations", "algorithm"})
        algorithm = raw.get("algorithm", "tpe")
        if algorithm not in ("tpe", "rand"):
            self.problems.append(
                Problem(f"{key}.algorithm", f"{show_value(algorithm)} has no Optuna sampler here; use tpe or rand")
            )
            return (None,) * 7
        written, value = self._get(raw, "num_runs")
        if written is None:
            self.problems.append(Problem(f"{key}.numRuns", "required field is missing (how many trials to run)"))
            return (None,) * 7
        n = self._whole(value, f"{key}.{written}", 1, MAX_TRIALS)
        if algorithm == "rand":
            n = self._count("random", params, n, f"{key}.{written}", f"{key}.params")
            return "random", params, None, n, metric, None, None
        return "tpe", params, None, n, metric, None, None

    def _early_stopping(self) -> tuple[list[StopRule], Pruning | None, float | None]:
        written, entries = self._get(self.raw, "early_stopping")
        if written is None:
            return [], None, None
        path = f"{self.key}.{written}"
        if not isinstance(entries, list):
            self.problems.append(Problem(path, f"{show_value(entries)} is not a list of early-stopping rules"))
            return [], None, None
        rules, policy, failure = [], None, None
        for i, entry in enumerate(entries):
            where = f"{path}[{i}]"
            if not isinstance(entry, dict):
                self.problems.append(Problem(where, f"{show_value(entry)} is not a mapping"))
                continue
            kind = entry.get("kind", "metric_early_stopping")
            if kind == "failure_early_stopping":
                self._unknown(entry, where, {"kind", "percent"})
                percent = entry.get("percent")
                if isinstance(percent, bool) or not isinstance(percent, (int, float)) or not 0 < percent <= 100:
                    self.problems.append(
                        Problem(f"{where}.percent", f"{show_value(percent)} is not a percentage in (0, 100]")
                    )
                else:
                    failure = float(percent)
                continue
            if kind != "metric_early_stopping":
                self.problems.append(
                    Problem(
                        f"{where}.kind", f"{show_value(kind)} is not metric_early_stopping or failure_early_stopping"
                    )
                )
                continue
            self._unknown(entry, where, {"kind", "metric", "value", "optimization", "policy"})
            metric = entry.get("metric")
            if not isinstance(metric, str) or not metric:
                self.problems.append(Problem(f"{where}.metric", f"{show_value(metric)} is not a metric name"))
                continue
            direction = _direction(entry.get("optimization", "maximize"), f"{where}.optimization", self.problems)
            value = entry.get("value")
            if direction and value is not None:
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                    self.problems.append(Problem(f"{where}.value", f"{show_value(value)} is not a finite number"))
                else:
                    rules.append(StopRule(metric=metric, value=value, direction=direction))
            elif direction and "policy" in entry and self.policy_metric is None:
                self.policy_metric = Objective(name=metric, direction=direction)
            if "policy" in entry:
                policy = self._policy(entry["policy"], f"{where}.policy") or policy
        # A rule without a value only names the metric a policy prunes by (the objective, when
        # nothing else names one); it never stops the sweep.
        return rules, policy, failure

    def _policy(self, raw: Any, path: str) -> Pruning | None:
        if not isinstance(raw, dict) or raw.get("kind") not in ("median", "truncation"):
            kind = raw.get("kind") if isinstance(raw, dict) else raw
            self.problems.append(
                Problem(
                    f"{path}.kind" if isinstance(raw, dict) else path,
                    f"{show_value(kind)} is not median or truncation (the stopping policies Optuna has a pruner for)",
                )
            )
            return None
        self._unknown(
            raw, path, {"kind", "evaluation_interval", "min_interval", "min_samples", "percent", "include_succeeded"}
        )
        interval = self._whole(self._get(raw, "evaluation_interval")[1] or 1, f"{path}.evaluationInterval", 1, 10**9)
        warmup = self._whole(self._get(raw, "min_interval")[1] or 0, f"{path}.minInterval", 0, 10**9)
        samples = self._whole(self._get(raw, "min_samples")[1] or 1, f"{path}.minSamples", 1, MAX_TRIALS)
        percent = None
        if raw["kind"] == "truncation":
            percent = raw.get("percent")
            if isinstance(percent, bool) or not isinstance(percent, (int, float)) or not 0 < percent < 100:
                self.problems.append(
                    Problem(f"{path}.percent", f"{show_value(percent)} is not a percentage in (0, 100)")
                )
                return None
        if interval is None or warmup is None or samples is None:
            return None
        return Pruning(
            kind=raw["kind"],
            interval_steps=interval,
            warmup_steps=warmup,
            min_trials=samples,
            percentile=None if percent is None else 100.0 - float(percent),
        )

    # ---- sizes -------------------------------------------------------------------------------
    def _limit(self, n: int, path: str) -> int | None:
        if n > MAX_TRIALS:
            self.problems.append(Problem(path, f"this sweep would run {n:,} trials; at most {MAX_TRIALS:,}"))
            return None
        return n

    def _count(
        self, algorithm: str, params: dict[str, Param], requested: int | None, path: str, matrix_path: str
    ) -> int | None:
        if not params:
            return None
        if algorithm == "grid":
            sampled = [name for name, p in params.items() if not p.discrete]
            if sampled:
                name = sampled[0]
                self.problems.append(
                    Problem(
                        f"{matrix_path}.{name}",
                        f"grid search walks discrete values; {name} is {params[name].kind} (use values, range, "
                        "linspace, logspace or geomspace, or random search)",
                    )
                )
                return None
            size = _grid_size(params) or 0
            if requested is None:
                if size > MAX_TRIALS:
                    self.problems.append(
                        Problem(
                            matrix_path,
                            f"the grid has {size:,} combinations ({_factors(params)}); at most {MAX_TRIALS:,}: "
                            "ask for fewer with n_experiments / numRuns, or use random search",
                        )
                    )
                    return None
                return size
            if requested > size:
                self.problems.append(
                    Problem(
                        path,
                        f"{requested} is more than the grid's {size} combinations ({_factors(params)}): "
                        f"ask for at most {size}",
                    )
                )
                return None
            if requested < size:
                self.notes.append(
                    f"the grid has {size:,} combinations ({_factors(params)}); {requested} of them are run"
                )
            return requested
        if requested is None:
            return None
        if all(p.discrete or p.kind == "pvalues" for p in params.values()):
            size = _grid_size(params, with_pvalues=True) or 0
            if requested > size:
                self.problems.append(
                    Problem(
                        path,
                        f"{requested} trials asked of a space with {size} distinct combinations ({_factors(params)}): "
                        f"ask for at most {size}, or use grid search",
                    )
                )
                return None
        return requested


def _grid_size(params: dict[str, Param], with_pvalues: bool = False) -> int | None:
    size = 1
    for param in params.values():
        if param.values is None or (param.kind == "pvalues" and not with_pvalues):
            return None
        size *= len(param.values)
    return size


def _factors(params: dict[str, Param]) -> str:
    return " x ".join(f"{name} {len(p.values or [])}" for name, p in params.items())


def hyperband_trials(max_iter: int, eta: int) -> int:
    """Configurations Hyperband tries for `max_iter` and `eta` (Li et al. 2018, as Polyaxon's
    hyperband counts them): s_max = floor(log_eta(max_iter)), B = (s_max + 1) * max_iter, and
    bracket s tries ceil(B / max_iter * eta**s / (s + 1)) configurations."""
    s_max = int(math.floor(math.log(max_iter) / math.log(eta) + 1e-9))
    budget = (s_max + 1) * max_iter
    return sum(math.ceil(budget / max_iter * eta**s / (s + 1)) for s in range(s_max + 1))
