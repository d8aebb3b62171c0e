"""Optuna is the engine: Polyaxon's search keys mapped onto its samplers and pruners, and the
study kept in the sweep's directory (Optuna's journal file storage), so that a sweep survives
its controller, the kernel and the Jupyter server, and resumes where it was.

* `grid_search` / `kind: grid`: trial i gets the i-th point of the product of the parameters'
  values in the order written, the last parameter changing fastest (Polyaxon's order:
  `itertools.product` in polyaxon/experiment_groups/search_managers/grid.py, v0.x), so
  `n_experiments` / `numRuns` run the first N of it, the same ones every time. (Optuna's own
  `GridSampler` picks the grid's points at random.)
* `random_search` / `kind: random`, `hyperopt` with `algorithm: rand`: `RandomSampler`.
* `bo` / `kind: bayes` / Katib's `bayesianoptimization`: `GPSampler` (a Gaussian process,
  log expected improvement; several objectives: log expected hypervolume improvement),
  `n_initial_trials` / `numInitialRuns` random trials first. It needs torch and SciPy (the
  `bayes` extra); a sweep is refused before it starts without them (`check_engine`).
* `kind: hyperopt` (`algorithm: tpe`), Katib's `tpe` / `multivariate-tpe`: `TPESampler`.
* `cmaes` / `kind: cmaes`: `CmaEsSampler` (`sigma0`, `restart_strategy`, `popsize`).
* `nsga2` / `kind: nsga2`: `NSGAIISampler` (`population_size`), for several objectives.
* `hyperband` / `kind: hyperband`: `RandomSampler` + `HyperbandPruner(min_resource=1,
  max_resource=max_iter, reduction_factor=eta)`; each trial gets `resource.name = max_iter` and
  is stopped at the step where it falls behind. With `resume: true`: `RandomSampler`, no pruner;
  the controller runs Hyperband's brackets and promotes the kept trials (`promotion.py`).
* `asha` / `kind: asha`: `RandomSampler` + `SuccessiveHalvingPruner(min_resource=min_iter,
  reduction_factor=eta)` (asynchronous successive halving); trials get `max_iter`.
* `kind: mapping`: no sampling; trial i gets `values[i]`.
* early stopping `policy: {kind: median}`: `MedianPruner(n_startup_trials=min_samples,
  n_warmup_steps=min_interval, interval_steps=evaluation_interval)`.
* early stopping `policy: {kind: truncation, percent}`: `PercentilePruner(100 - percent, ...)`
  (the worst `percent` are stopped).
* neither: `NopPruner`.
* `seed`: the sampler's seed (offset by the trials already asked when a sweep resumes, so a
  resumed random search does not repeat them).
* two or more `metrics`: a study with one direction per metric; its result is the Pareto front
  (`study.best_trials`).

Intermediate values are the objective metric's `log_metrics(step=..., <metric>=...)` points of
the chief (master 0, else worker 0), reported at their step; a trial's value is the last one
(with several objectives, each one's last value; nothing is reported on the way: no pruner
ranks trials on several values).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .space import grid_space
from .spec import SweepSpec

#: The study's name inside its journal (one study per sweep directory).
STUDY_NAME = "sweep"


def _grid_sampler(space: dict[str, list[Any]]) -> Any:
    """A sampler that gives trial i the i-th point of the grid, in `itertools.product` order:
    the point follows from the trial's number alone, so a resumed sweep goes on in order."""
    import optuna

    class OrderedGridSampler(optuna.samplers.BaseSampler):
        def infer_relative_search_space(self, study: Any, trial: Any) -> dict[str, Any]:
            return {}

        def sample_relative(self, study: Any, trial: Any, search_space: Any) -> dict[str, Any]:
            return {}

        def sample_independent(self, study: Any, trial: Any, param_name: str, param_distribution: Any) -> Any:
            return grid_point(space, trial.number)[param_name]

    return OrderedGridSampler()


def grid_point(space: dict[str, list[Any]], index: int) -> dict[str, Any]:
    """The `index`-th point of the product of `space`'s values (the last name changing fastest)."""
    point = {}
    for name in reversed(list(space)):
        index, digit = divmod(index, len(space[name]))
        point[name] = space[name][digit]
    return {name: point[name] for name in space}


def check_engine(spec: SweepSpec, importable: Any = None) -> None:
    """ValueError naming the section when the sampler `spec` needs cannot be imported here
    (said before a sweep is recorded, not by its controller later)."""
    import importlib.util

    found = importable or (lambda name: importlib.util.find_spec(name) is not None)
    needs = {"bayes": ("torch", "scipy"), "cmaes": ("cmaes",)}.get(spec.algorithm, ())
    missing = [name for name in needs if not found(name)]
    if missing:
        where = {"bayes": "bo" if spec.form == "hptuning" else "kind"}.get(spec.algorithm, spec.algorithm)
        install = "'jupyter_px[bayes]'" if spec.algorithm == "bayes" else " ".join(missing)
        raise ValueError(
            f"{spec.form}.{where}: {spec.algorithm} runs Optuna's "
            f"{'GP' if spec.algorithm == 'bayes' else 'CMA-ES'} sampler, which needs {' and '.join(missing)}: "
            f"pip install {install}"
        )


def sampler_for(spec: SweepSpec, asked: int = 0) -> Any:
    import optuna

    seed = None if spec.seed is None else spec.seed + asked
    options = spec.sampler_options
    startup = max(0, (spec.startup_trials if spec.startup_trials is not None else 10) - asked)
    if spec.algorithm == "grid":
        return _grid_sampler(grid_space(spec))
    if spec.algorithm == "bayes":
        return optuna.samplers.GPSampler(seed=seed, n_startup_trials=startup, warn_independent_sampling=False)
    if spec.algorithm == "tpe":
        return optuna.samplers.TPESampler(seed=seed, multivariate=bool(options.get("multivariate")))
    if spec.algorithm == "cmaes":
        # only what the sweep sets: Optuna deprecates sigma0 (4.9) and restart_strategy (4.4) for
        # removal in 6.0, where passing them at all, even None, would be refused
        chosen = {k: options[k] for k in ("sigma0", "restart_strategy", "popsize") if options.get(k) is not None}
        return optuna.samplers.CmaEsSampler(
            seed=seed, n_startup_trials=startup, warn_independent_sampling=False, **chosen
        )
    if spec.algorithm == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed, population_size=options.get("population_size", 50))
    return optuna.samplers.RandomSampler(seed=seed)


def pruner_for(spec: SweepSpec) -> Any:
    import optuna

    pruning = spec.pruning
    if pruning is None or spec.promote:  # promoting Hyperband: the controller decides (promotion.py)
        return optuna.pruners.NopPruner()
    if pruning.kind == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=1, max_resource=pruning.max_resource or "auto", reduction_factor=pruning.reduction_factor
        )
    if pruning.kind == "asha":
        return optuna.pruners.SuccessiveHalvingPruner(
            min_resource=pruning.min_resource, reduction_factor=pruning.reduction_factor
        )
    if pruning.kind == "median":
        return optuna.pruners.MedianPruner(
            n_startup_trials=pruning.min_trials,
            n_warmup_steps=pruning.warmup_steps,
            interval_steps=pruning.interval_steps,
        )
    return optuna.pruners.PercentilePruner(
        pruning.percentile or 50.0,
        n_startup_trials=pruning.min_trials,
        n_warmup_steps=pruning.warmup_steps,
        interval_steps=pruning.interval_steps,
    )


def storage_at(journal: Path) -> Any:
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    return JournalStorage(JournalFileBackend(str(journal)))


def open_study(spec: SweepSpec, journal: Path) -> Any:
    """The sweep's study, created on first use, loaded (with its trials) afterwards."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = storage_at(journal)
    directions = [objective.direction for objective in spec.objectives] or ["minimize"]
    study = optuna.create_study(study_name=STUDY_NAME, storage=storage, directions=directions, load_if_exists=True)
    asked = len(study.get_trials(deepcopy=False))
    study.sampler = sampler_for(spec, asked)
    study.pruner = pruner_for(spec)
    return study
