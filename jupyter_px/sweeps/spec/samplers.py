"""The model-based searches' fields, the same in v0 (a section named after the algorithm) and v1
(`matrix: {kind: ...}`, snake_case or camelCase keys):

* Bayesian optimization: Polyaxon v0 `bo` (`n_initial_trials`, `n_iterations`, `metric`,
  `utility_function`), v1 `kind: bayes` (`numInitialRuns`, `maxIterations`), Katib's
  `bayesianoptimization`. Optuna's GP sampler: a Gaussian process with a Matérn 5/2 kernel
  whose length scales are fitted to the trials, maximizing log expected improvement. Of
  Polyaxon's `utility_function` (docs/references/polyaxon-optimization-engine/bayesian-optimization.md),
  `acquisition_function: ei` and `kernel: matern` are what it does; everything else is said,
  in a note, not to be used (the sampler has no such knobs).
* CMA-ES (Katib's `cmaes`; ours in v0): `n_experiments` / `numRuns`, `n_initial_trials`,
  `sigma0` (Katib's `sigma`), `restart_strategy` (ipop, bipop: applied by Optuna before 4.4,
  said in a note after), `popsize`: Optuna's CmaEsSampler.
* NSGA-II (ours: v0 `nsga2`, v1 `kind: nsga2`): `n_experiments` / `numRuns`,
  `population_size`; Optuna's NSGAIISampler, for two or more objectives (`metrics`).
* TPE under Katib's names (`tpe`, `multivariate-tpe`): `numRuns`; Optuna's TPESampler.
"""

from __future__ import annotations

from typing import Any

from ...topology.errors import Problem, show_value
from .fields import Fields, Search
from .models import MAX_TRIALS, Algorithm
from .params import Param
from .sizes import count_trials, limit

_V1_COMMON = {"kind", "params", "concurrency", "seed", "early_stopping", "metric", "metrics"}


def _runs(fields: Fields, section: dict[str, Any], path: str, params: dict[str, Param]) -> int | None:
    """`n_experiments` (v0) / `numRuns` (v1): required, and no more than the space has points."""
    key, value = fields.get(section, "num_runs" if fields.v1 else "n_experiments")
    where = f"{path}.{key or ('numRuns' if fields.v1 else 'n_experiments')}"
    if key is None:
        fields.problems.append(Problem(where, "required field is missing (how many trials to run)"))
        return None
    n = fields.whole(value, where, 1, MAX_TRIALS)
    return count_trials(fields, "random", params, n, where, f"{path}.{'params' if fields.v1 else 'matrix'}")


def read_bayes(fields: Fields, section: dict[str, Any], path: str, params: dict[str, Param]) -> Search | None:
    v1 = fields.v1
    names = ("num_initial_runs", "max_iterations") if v1 else ("n_initial_trials", "n_iterations")
    fields.unknown(section, path, {*names, "metric", "utility_function"} | (_V1_COMMON if v1 else set()))
    metric = fields.metric(section["metric"], f"{path}.metric") if "metric" in section else None
    first, rest = (fields.get(section, name) for name in names)
    initial = fields.whole(10 if first[0] is None else first[1], f"{path}.{first[0] or names[0]}", 1, MAX_TRIALS)
    iterations = fields.whole(10 if rest[0] is None else rest[1], f"{path}.{rest[0] or names[1]}", 0, MAX_TRIALS)
    written, utility = fields.get(section, "utility_function")
    if written is not None:
        _utility_note(fields, utility, f"{path}.{written}")
    n = None if initial is None or iterations is None else limit(fields, initial + iterations, path)
    return Search("bayes", params, n, metric=metric, startup=initial)


def _utility_note(fields: Fields, raw: Any, path: str) -> None:
    """Say which of Polyaxon's `utility_function` settings the GP sampler follows and which not."""
    if not isinstance(raw, dict):
        fields.problems.append(Problem(path, f"{show_value(raw)} is not a mapping (acquisition_function, ...)"))
        return
    used: list[str] = []
    unused: list[str] = []
    acquisition = fields.get(raw, "acquisition_function")[1]
    if acquisition is not None:
        if acquisition not in ("ucb", "ei", "poi"):
            fields.problems.append(
                Problem(f"{path}.acquisitionFunction" if fields.v1 else f"{path}.acquisition_function",
                        f"{show_value(acquisition)} is not ucb, ei or poi")
            )  # fmt: skip
            return
        (used if acquisition == "ei" else unused).append(f"acquisition_function {acquisition}")
    for name in ("kappa", "eps"):
        if name in raw:
            unused.append(f"{name} {_number(raw[name])}")
    process = fields.get(raw, "gaussian_process")[1]
    if isinstance(process, dict):
        kernel = process.get("kernel")
        if kernel is not None:
            (used if kernel == "matern" else unused).append(f"kernel {kernel}")
        nu = process.get("nu")
        if nu is not None:
            (used if nu == 2.5 else unused).append(f"nu {_number(nu)}")
        unused += [
            f"{name} {_number(process[name])}" for name in ("length_scale", "n_restarts_optimizer") if name in process
        ]
    text = "Optuna's GP sampler maximizes log expected improvement with a Matérn 5/2 kernel fitted to the trials"
    text += f"; as written: {', '.join(used)}" if used else ""
    text += f"; not used: {', '.join(unused)}" if unused else ""
    fields.notes.append(f"{path}: {text}")


def _number(value: Any) -> str:
    """1.0 and 1 alike (a value written back to YAML loses its `.0`)."""
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def optuna_restarts_cma_es() -> bool:
    """Whether the installed Optuna's CmaEsSampler still applies `restart_strategy`: 4.4
    deprecated it, and ignores it with a FutureWarning (optuna/samplers/_cmaes.py, v4.4.0)."""
    from importlib.metadata import version

    major, minor = (int(part) for part in version("optuna").split(".")[:2])
    return (major, minor) < (4, 4)


def read_cmaes(fields: Fields, section: dict[str, Any], path: str, params: dict[str, Param]) -> Search | None:
    v1 = fields.v1
    options = {"n_initial_trials", "sigma0", "sigma", "restart_strategy", "popsize", "metric"}
    fields.unknown(section, path, options | ({"num_runs"} | _V1_COMMON if v1 else {"n_experiments"}))
    metric = fields.metric(section["metric"], f"{path}.metric") if "metric" in section else None
    n = _runs(fields, section, path, params)
    startup = fields.get(section, "n_initial_trials")
    initial = fields.whole(startup[1], f"{path}.{startup[0]}", 0, MAX_TRIALS) if startup[0] else 1
    chosen: dict[str, Any] = {}
    sigma_key, sigma = fields.get(section, "sigma0")
    if sigma_key is None:
        sigma_key, sigma = fields.get(section, "sigma")
    if sigma_key is not None:
        if isinstance(sigma, bool) or not isinstance(sigma, (int, float)) or not sigma > 0:
            fields.problems.append(Problem(f"{path}.{sigma_key}", f"{show_value(sigma)} is not a number above 0"))
        else:
            chosen["sigma0"] = float(sigma)
    restart_key, restart = fields.get(section, "restart_strategy")
    if restart_key is not None and restart not in (None, "none", "ipop", "bipop"):
        fields.problems.append(Problem(f"{path}.{restart_key}", f"{show_value(restart)} is not none, ipop or bipop"))
    elif restart not in (None, "none"):
        if optuna_restarts_cma_es():
            chosen["restart_strategy"] = restart
        else:  # said, not passed: Optuna would only warn that it ignores it
            fields.notes.append(
                f"{path}.{restart_key}: {restart} is not applied: Optuna 4.4 and later run CMA-ES "
                "without restarts (restart strategies moved to OptunaHub)"
            )
    if "popsize" in section:
        popsize = fields.whole(section["popsize"], f"{path}.popsize", 2, 10_000)
        if popsize is not None:
            chosen["popsize"] = popsize
    if not any(not p.discrete and p.kind != "pvalues" for p in params.values()):
        fields.notes.append(f"{path}: CMA-ES samples numbers; these parameters are lists of values, sampled at random")
    return Search("cmaes", params, n, metric=metric, startup=initial, options=chosen)


def read_nsga2(fields: Fields, section: dict[str, Any], path: str, params: dict[str, Param]) -> Search | None:
    fields.unknown(
        section, path, {"population_size", "metric"} | ({"num_runs"} | _V1_COMMON if fields.v1 else {"n_experiments"})
    )
    metric = fields.metric(section["metric"], f"{path}.metric") if "metric" in section else None
    n = _runs(fields, section, path, params)
    chosen: dict[str, Any] = {}
    key, size = fields.get(section, "population_size")
    if key is not None:
        size = fields.whole(size, f"{path}.{key}", 2, 10_000)
        if size is not None:
            chosen["population_size"] = size
    return Search("nsga2", params, n, metric=metric, options=chosen)


def read_katib_tpe(fields: Fields, kind: str, params: dict[str, Param]) -> Search | None:
    """Katib's `tpe` / `multivariate-tpe` as a v1 kind: `numRuns` trials of Optuna's TPE."""
    key = fields.key
    fields.unknown(fields.raw, key, _V1_COMMON | {"num_runs"})
    metric = fields.metric(fields.raw["metric"], f"{key}.metric") if "metric" in fields.raw else None
    n = _runs(fields, fields.raw, key, params)
    algorithm: Algorithm = "tpe"
    return Search(algorithm, params, n, metric=metric, options={"multivariate": kind == "multivariate-tpe"})
