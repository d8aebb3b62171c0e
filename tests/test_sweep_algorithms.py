"""Which trials each search algorithm asks for, through real Optuna studies (no runs): the grid's
order, and the samplers and pruners each name of Polyaxon's, Katib's and ours gets."""

from __future__ import annotations

import itertools
import re

import pytest

from jupyter_px.sweeps.engine import check_engine, open_study
from jupyter_px.sweeps.promotion import Plan, TrialView
from jupyter_px.sweeps.space import suggest
from jupyter_px.sweeps.spec import parse_polyaxonfile, read_sweep, try_parse_polyaxonfile


def spec_of(text: str):
    return read_sweep(parse_polyaxonfile(text))


def asked(spec, journal, n: int) -> list[dict]:
    study = open_study(spec, journal)
    out = []
    for _ in range(n):
        trial = study.ask()
        out.append(suggest(trial, spec))
        study.tell(trial, 0.0)
    return out


def test_a_grid_walks_the_product_in_the_order_written_and_resumes_in_it(tmp_path):
    spec = spec_of(
        "hptuning:\n  grid_search: {n_experiments: 5}\n  matrix:\n"
        "    lr: {values: [0.1, 0.01, 0.001]}\n    act: {values: [relu, tanh]}\n    depth: {range: [1, 3, 1]}\n"
    )
    product = [
        {"lr": lr, "act": act, "depth": depth}
        for lr, act, depth in itertools.product([0.1, 0.01, 0.001], ["relu", "tanh"], [1, 2])
    ]
    assert asked(spec, tmp_path / "a.journal", 5) == product[:5]
    assert asked(spec, tmp_path / "b.journal", 5) == product[:5]  # the same file, the same trials
    first = asked(spec, tmp_path / "c.journal", 2)
    assert first + asked(spec, tmp_path / "c.journal", 3) == product[:5]  # a resumed study goes on in order


HEAD = "hptuning:\n  matrix:\n    x: {uniform: [0, 1]}\n    y: {uniform: [0, 1]}\n"
LOSS = "  metric: {name: loss, optimization: minimize}\n"


@pytest.mark.parametrize(
    ("section", "sampler", "pruner"),
    [
        ("  bo: {n_initial_trials: 3, n_iterations: 2, metric: {name: loss, optimization: minimize}}\n",
         "GPSampler", "NopPruner"),
        ("  random_search: {n_experiments: 4}\n" + LOSS, "RandomSampler", "NopPruner"),
        ("  cmaes: {n_experiments: 9, sigma0: 0.2, restart_strategy: ipop, popsize: 6}\n" + LOSS,
         "CmaEsSampler", "NopPruner"),
        ("  nsga2: {n_experiments: 8, population_size: 4}\n" + LOSS, "NSGAIISampler", "NopPruner"),
        ("  asha: {n_experiments: 8, max_iter: 27, min_iter: 3, eta: 3, resource: {name: steps},"
         " metric: {name: loss, optimization: minimize}}\n", "RandomSampler", "SuccessiveHalvingPruner"),
        ("  hyperband: {max_iter: 9, eta: 3, resource: {name: steps}, metric: {name: loss}}\n",
         "RandomSampler", "HyperbandPruner"),
        ("  hyperband: {max_iter: 9, eta: 3, resource: {name: steps}, metric: {name: loss}, resume: true}\n",
         "RandomSampler", "NopPruner"),
        ("  random_search: {n_experiments: 4}\n  early_stopping: [{metric: loss, optimization: minimize,"
         " policy: {kind: median}}]\n", "RandomSampler", "MedianPruner"),
        ("  random_search: {n_experiments: 4}\n  early_stopping: [{metric: loss, optimization: minimize,"
         " policy: {kind: truncation, percent: 30}}]\n", "RandomSampler", "PercentilePruner"),
    ],
    ids=["bo", "random", "cmaes", "nsga2", "asha", "hyperband", "hyperband resume", "median", "truncation"],
)  # fmt: skip
def test_each_v0_name_gets_its_optuna_sampler_and_pruner(tmp_path, section, sampler, pruner):
    spec = spec_of(HEAD + section)
    study = open_study(spec, tmp_path / "study.journal")
    assert (type(study.sampler).__name__, type(study.pruner).__name__) == (sampler, pruner)


def test_a_restart_strategy_optuna_no_longer_applies_is_said_not_passed(tmp_path):
    """Optuna 4.4 and later run CMA-ES without restarts, and only warn when given a restart
    strategy: the sweep says so in a note, and the sampler is made without a warning."""
    import warnings

    from jupyter_px.sweeps.spec.samplers import optuna_restarts_cma_es

    spec = spec_of(HEAD + "  cmaes: {n_experiments: 9, restart_strategy: ipop}\n" + LOSS)
    noted = [note for note in spec.notes if "restart_strategy: ipop is not applied" in note]
    assert bool(noted) is not optuna_restarts_cma_es(), spec.notes
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        study = open_study(spec, tmp_path / "study.journal")
    assert type(study.sampler).__name__ == "CmaEsSampler"


@pytest.mark.parametrize(
    ("kind", "sampler"),
    [("bayes", "GPSampler"), ("bayesianoptimization", "GPSampler"), ("tpe", "TPESampler"),
     ("multivariate-tpe", "TPESampler"), ("cmaes", "CmaEsSampler"), ("nsga2", "NSGAIISampler")],
)  # fmt: skip
def test_katib_and_polyaxon_v1_kinds(tmp_path, kind, sampler):
    runs = "" if kind in ("bayes", "bayesianoptimization") else "  numRuns: 6\n"
    spec = spec_of(
        f"matrix:\n  kind: {kind}\n{runs}  metric: {{name: acc, optimization: maximize}}\n"
        "  params:\n    x: {kind: uniform, value: [0, 1]}\n    y: {kind: uniform, value: [0, 1]}\n"
    )
    study = open_study(spec, tmp_path / "study.journal")
    assert type(study.sampler).__name__ == sampler
    assert study.sampler._multivariate if kind == "multivariate-tpe" else True


def _minimize(spec, journal, f, n):
    study = open_study(spec, journal)
    for _ in range(n):
        trial = study.ask()
        values = suggest(trial, spec)
        study.tell(trial, f(values))
    return study


def test_bayesian_optimization_is_a_gaussian_process_that_finds_the_minimum(tmp_path):
    """Five random trials, then ten the GP chooses: the best is far closer than random search's."""
    f = lambda v: (v["x"] - 0.3) ** 2 + (v["y"] - 0.7) ** 2  # noqa: E731
    bo = spec_of(
        HEAD + "  seed: 1\n  bo: {n_initial_trials: 5, n_iterations: 10, metric: {name: f, optimization: min}}\n"
    )
    random = spec_of(HEAD + "  seed: 1\n  random_search: {n_experiments: 15}\n  metric: {name: f}\n")
    gp = _minimize(bo, tmp_path / "bo.journal", f, 15)
    rs = _minimize(random, tmp_path / "rs.journal", f, 15)
    assert gp.best_value < 0.01 and gp.best_value < rs.best_value


def test_cmaes_converges_on_a_quadratic(tmp_path):
    f = lambda v: (v["x"] - 0.3) ** 2 + (v["y"] - 0.7) ** 2  # noqa: E731
    spec = spec_of(
        HEAD + "  seed: 2\n  cmaes: {n_experiments: 60, sigma0: 0.3}\n  metric: {name: f, optimization: min}\n"
    )
    assert _minimize(spec, tmp_path / "cma.journal", f, 60).best_value < 1e-3


def test_utility_function_is_used_where_the_gp_can_and_the_rest_is_named():
    spec = spec_of(
        HEAD + "  bo:\n    metric: {name: loss, optimization: minimize}\n    utility_function:\n"
        "      acquisition_function: ei\n      eps: 1.2\n      gaussian_process: {kernel: matern, length_scale: 1.0,"
        " nu: 2.5, n_restarts_optimizer: 0}\n"
    )
    assert spec.notes == [
        "hptuning.bo.utility_function: Optuna's GP sampler maximizes log expected improvement with a Matérn 5/2"
        " kernel fitted to the trials; as written: acquisition_function ei, kernel matern, nu 2.5; not used:"
        " eps 1.2, length_scale 1, n_restarts_optimizer 0"
    ]


def test_a_missing_sampler_dependency_is_refused_before_the_sweep_starts():
    spec = spec_of(HEAD + "  bo: {metric: {name: loss}}\n")
    check_engine(spec)  # torch and scipy are installed here
    with pytest.raises(ValueError, match=re.escape(
        "hptuning.bo: bayes runs Optuna's GP sampler, which needs torch and scipy: pip install 'jupyter_px[bayes]'"
    )):  # fmt: skip
        check_engine(spec, importable=lambda name: False)


TWO = "  metrics: [{name: loss, optimization: minimize}, {name: throughput, optimization: maximize}]\n"


@pytest.mark.parametrize(
    ("section", "sampler"),
    [("  nsga2: {n_experiments: 8}\n", "NSGAIISampler"), ("  bo: {n_iterations: 2}\n", "GPSampler"),
     ("  random_search: {n_experiments: 5}\n", "RandomSampler")],
)  # fmt: skip
def test_two_objectives_make_a_study_of_two_directions(tmp_path, section, sampler):
    spec = spec_of(HEAD + section + TWO)
    assert spec.multi_objective and spec.objective is None
    study = open_study(spec, tmp_path / "study.journal")
    assert [d.name for d in study.directions] == ["MINIMIZE", "MAXIMIZE"]
    assert type(study.sampler).__name__ == sampler


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ("  hyperband: {max_iter: 9, resource: {name: s}}\n",
         "hptuning.metrics: Hyperband ranks trials by one metric; with 2 objectives use random, grid, bayes (bo),"
         " tpe (hyperopt) or nsga2"),
        ("  cmaes: {n_experiments: 5}\n",
         "hptuning.metrics: CMA-ES ranks trials by one metric; with 2 objectives use random, grid, bayes (bo),"
         " tpe (hyperopt) or nsga2"),
        ("  random_search: {n_experiments: 5}\n  early_stopping: [{metric: loss, policy: {kind: median}}]\n",
         "hptuning.metrics: pruning (median) ranks trials by one metric: with 2 objectives remove the policy"),
        ("  random_search: {n_experiments: 5}\n  metric: {name: loss}\n",
         "hptuning.metrics: give either metric or metrics, not both"),
    ],
)  # fmt: skip
def test_what_cannot_rank_several_objectives_is_refused(section, message):
    _, problems = try_parse_polyaxonfile(HEAD + section + TWO)
    assert [str(p) for p in problems] == [message]


def test_promoting_hyperband_runs_brackets_rung_by_rung_keeping_the_best():
    """The plan alone, driven as the controller drives it (two runs at a time), with a value per
    trial that does not change with the resource: each rung keeps its best `keep`, which run on
    with eta times the resource, bracket after bracket (Hyperband(max_iter=4, eta=2): 4 trials
    at 1, 2 at 2, 1 at 4; then 3 at 2, 1 at 4; then 3 at 4)."""
    spec = spec_of(
        HEAD + "  hyperband: {max_iter: 4, eta: 2, resource: {name: steps}, resume: true,"
        " metric: {name: loss, optimization: minimize}}\n"
    )
    plan = Plan(spec)
    quality = [0.9, 0.2, 0.5, 0.1, 0.7, 0.3, 0.8, 0.6, 0.4, 0.05]  # loss (minimized) of trial i
    views: dict[int, TrialView] = {}
    runs: list[tuple[int, int | float]] = []  # (trial, resource) in the order started
    running: list[int] = []
    while True:
        for decision in plan.decisions(views.values()):
            view = views[decision.number]
            if decision.kept:
                view.rung = decision.rung
            else:
                view.finished = True
        while len(running) < 2 and (step := plan.next_run(views.values())) is not None:
            kind, value = step
            number = len(views) if kind == "new" else value
            view = views.setdefault(number, TrialView(number, finished=False))
            view.running = True
            running.append(number)
            runs.append((number, plan.resource_at(number, view.rung)))
        if not running:
            break
        number = running.pop(0)  # the oldest run ends
        view = views[number]
        view.running = False
        view.values[view.rung] = quality[number]
        if view.rung == plan.last_rung(number):
            view.finished = True
    assert len(views) == 10 and all(v.finished for v in views.values())
    assert [b.configs for b in plan.brackets] == [4, 3, 3]
    first = [r for r in runs if r[0] < 4]
    assert sorted(first) == [(0, 1), (1, 1), (1, 2), (2, 1), (3, 1), (3, 2), (3, 4)]  # 3 and 1 were best
    second = [r for r in runs if 4 <= r[0] < 7]
    assert sorted(second) == [(4, 2), (5, 2), (5, 4), (6, 2)]
    assert sorted(r for r in runs if r[0] >= 7) == [(7, 4), (8, 4), (9, 4)]
    # one bracket at a time: no run of a bracket starts before the previous bracket's last ends
    assert [r[0] for r in runs].index(4) > [r[0] for r in runs].index(3, 4)
