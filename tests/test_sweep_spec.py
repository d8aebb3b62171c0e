"""The sweep section of a polyaxonfile (Polyaxon v0 `hptuning:`, v1 `matrix:`): the docs'
examples validate, every bad section gives one clear message with its path, and the values a
trial gets follow the kinds' definitions (sampled through a real Optuna study)."""

from __future__ import annotations

import math
from pathlib import Path

import optuna
import pytest
import yaml

from jupyter_px.sweeps.engine import open_study, pruner_for, sampler_for
from jupyter_px.sweeps.space import suggest
from jupyter_px.sweeps.spec import hyperband_trials, parse_polyaxonfile, read_sweep, try_parse_polyaxonfile
from jupyter_px.topology import to_dict, to_yaml

DATA = Path(__file__).parent / "data" / "sweeps"
HEAD = "framework: pytorch\nenvironment: {replicas: {n_workers: 1}}\n"

#: Polyaxon v0's examples (docs/references/polyaxonfile-yaml-specification/hptuning.md and
#: docs/concepts/experiment-groups-hyperparameters-optimization.md), each a whole hptuning section.
V0_EXAMPLES = {
    "concepts: grid over a logspace": """
kind: group
hptuning:
  matrix:
    lr:
      logspace: 0.01:0.1:5
""",
    "concepts: random search": """
hptuning:
  concurrency: 2
  random_search:
    n_experiments: 5
  matrix:
    lr:
      logspace: 0.01:0.1:5
""",
    "concepts: grid with n_experiments": """
hptuning:
  concurrency: 2
  grid_search:
    n_experiments: 4
  matrix:
    lr:
      logspace: 0.01:0.1:5
""",
    "concepts: early stopping": """
hptuning:
  concurrency: 2
  random_search:
    n_experiments: 4
  matrix:
    lr:
      uniform: 0.01:0.8
  early_stopping:
    - metric: accuracy
      value: 0.9
      optimization: maximize
    - metric: loss
      value: 0.05
      optimization: minimize
""",
    "reference: matrix, grid": """
hptuning:
  seed: 3234
  concurrency: 3
  matrix:
    lr:
      logspace: 0.01:0.1:5
    loss:
      values: [MeanSquaredError, AbsoluteDifference]
""",
    "reference: value forms": """
hptuning:
  random_search: {n_experiments: 10}
  matrix:
    a: {range: [1, 10, 2]}
    b: {range: {start: 1, stop: 10, step: 2}}
    c: {range: '1:10:2'}
    d: {linspace: {start: 1, stop: 10, num: 20}}
    e: {geomspace: '1:2:20'}
    f: {quniform: {low: 0, high: 1, q: 0.1}}
    g: {loguniform: [0, 1]}
    h: {qloguniform: 0:1:0.1}
    i: {normal: [0, 1]}
    j: {qnormal: 0:1:0.1}
    k: {lognormal: {loc: 0, scale: 1}}
    l: {qlognormal: [0, 1, 0.1]}
    m: {pvalues: [[MeanSquaredError, 0.2], [AbsoluteDifference, 0.8]]}
""",
    "reference: hyperband": """
hptuning:
  matrix:
    lr: {uniform: 0.01:0.8}
  hyperband:
    max_iter: 81
    eta: 3
    resource:
      name: num_steps
      type: int
    metric:
      name: loss
      optimization: minimize
    resume: False
""",
    "reference: bo": """
hptuning:
  matrix:
    lr: {uniform: 0.01:0.8}
  bo:
    n_iterations: 15
    n_initial_trials: 30
    metric:
      name: loss
      optimization: minimize
    utility_function:
      acquisition_function: ucb
      kappa: 1.2
      gaussian_process:
        kernel: matern
        length_scale: 1.0
        nu: 1.9
        n_restarts_optimizer: 0
""",
}

#: Polyaxon v1's `matrix` forms (the V1GridSearch, V1RandomSearch, V1Hyperband, V1Bayes,
#: V1Hyperopt and V1Mapping schemas' examples).
V1_EXAMPLES = {
    "grid": """
matrix:
  kind: grid
  concurrency: 2
  numRuns: 4
  params:
    lr: {kind: logspace, value: 0.01:0.1:5}
    loss: {kind: choice, value: [MeanSquaredError, AbsoluteDifference]}
""",
    "random": """
matrix:
  kind: random
  concurrency: 2
  numRuns: 20
  seed: 1
  params:
    lr: {kind: uniform, value: [0, 1]}
    dropout: {kind: pchoice, value: [[0.1, 0.3], [0.5, 0.7]]}
""",
    "hyperband": """
matrix:
  kind: hyperband
  concurrency: 5
  maxIterations: 81
  eta: 3
  resource: {name: num_steps, type: int}
  metric: {name: loss, optimization: minimize}
  resume: false
  params:
    lr: {kind: loguniform, value: [-7, -2]}
""",
    "bayes": """
matrix:
  kind: bayes
  concurrency: 5
  maxIterations: 15
  numInitialRuns: 30
  metric: {name: loss, optimization: minimize}
  utilityFunction:
    acquisitionFunction: ucb
    kappa: 1.2
  params:
    lr: {kind: uniform, value: [0, 0.9]}
""",
    "hyperopt": """
matrix:
  kind: hyperopt
  algorithm: tpe
  numRuns: 20
  metric: {name: loss, optimization: minimize}
  params:
    lr: {kind: uniform, value: [0, 0.9]}
""",
    "mapping": """
matrix:
  kind: mapping
  concurrency: 2
  values:
    - lr: 0.001
      loss: MeanSquaredError
    - lr: 0.1
      loss: AbsoluteDifference
""",
    "early stopping policies": """
matrix:
  kind: random
  numRuns: 8
  params:
    lr: {kind: uniform, value: [0, 0.9]}
  earlyStopping:
    - kind: metric_early_stopping
      metric: loss
      value: 0.001
      optimization: minimize
      policy: {kind: truncation, percent: 25, evaluationInterval: 2, minInterval: 1, minSamples: 3}
    - kind: failure_early_stopping
      percent: 50
""",
}


@pytest.mark.parametrize(
    "text",
    list(V0_EXAMPLES.values()) + list(V1_EXAMPLES.values()),
    ids=list(V0_EXAMPLES) + [f"v1 {k}" for k in V1_EXAMPLES],
)
def test_docs_examples_validate_and_round_trip(text):
    topology = parse_polyaxonfile(HEAD + text)
    spec = read_sweep(topology)
    assert spec is not None and spec.n_trials >= 1
    again = parse_polyaxonfile(to_yaml(topology))
    assert read_sweep(again) == spec
    assert "hptuning" not in to_dict(topology.without_sweep()) and "matrix" not in to_dict(topology.without_sweep())


def test_what_each_example_means():
    spec = read_sweep(parse_polyaxonfile(HEAD + V0_EXAMPLES["concepts: grid over a logspace"]))
    assert (spec.algorithm, spec.n_trials, spec.concurrency, spec.objective) == ("grid", 5, 1, None)
    assert spec.params["lr"].values == [10**0.01, 10**0.0325, 10**0.055, 10**0.0775, 10**0.1] or all(
        math.isclose(a, b)
        for a, b in zip(spec.params["lr"].values, [10 ** (0.01 + 0.0225 * i) for i in range(5)], strict=True)
    )
    grid = read_sweep(parse_polyaxonfile(HEAD + V0_EXAMPLES["concepts: grid with n_experiments"]))
    assert grid.n_trials == 4 and grid.notes == ["the grid has 5 combinations (lr 5); 4 of them are run"]
    stopping = read_sweep(parse_polyaxonfile(HEAD + V0_EXAMPLES["concepts: early stopping"]))
    assert stopping.objective.name == "accuracy" and stopping.objective.direction == "maximize"
    assert [(r.metric, r.value, r.direction) for r in stopping.stop_rules] == [
        ("accuracy", 0.9, "maximize"),
        ("loss", 0.05, "minimize"),
    ]
    hyperband = read_sweep(parse_polyaxonfile(HEAD + V0_EXAMPLES["reference: hyperband"]))
    assert hyperband.n_trials == hyperband_trials(81, 3) == 5 + 8 + 15 + 34 + 81
    assert hyperband.pruning.kind == "hyperband" and hyperband.resource.name == "num_steps"
    assert hyperband.objective.name == "loss"
    bo = read_sweep(parse_polyaxonfile(HEAD + V0_EXAMPLES["reference: bo"]))
    assert (bo.algorithm, bo.n_trials, bo.startup_trials) == ("bayes", 45, 30)
    assert "utility_function" in bo.notes[0]
    forms = read_sweep(parse_polyaxonfile(HEAD + V0_EXAMPLES["reference: value forms"])).params
    assert forms["a"].values == forms["b"].values == forms["c"].values == [1, 3, 5, 7, 9]
    assert len(forms["d"].values) == 20 and forms["d"].values[0] == 1 and forms["d"].values[-1] == 10
    assert forms["m"].probabilities == [0.2, 0.8]
    truncation = read_sweep(parse_polyaxonfile(HEAD + V1_EXAMPLES["early stopping policies"]))
    assert truncation.pruning.kind == "truncation" and truncation.pruning.percentile == 75
    assert truncation.max_failure_percent == 50
    mapping = read_sweep(parse_polyaxonfile(HEAD + V1_EXAMPLES["mapping"]))
    assert mapping.n_trials == 2 and mapping.mapping[1] == {"lr": 0.1, "loss": "AbsoluteDifference"}


def test_the_objective_rule():
    """The algorithm's own metric, else early stopping's, else `metric`."""
    base = "hptuning:\n  matrix: {lr: {uniform: [0, 1]}}\n"
    rule = "  early_stopping: [{metric: loss, value: 0.1, optimization: minimize}]\n  metric: {name: f1}\n"
    own = base + "  bo: {metric: {name: acc, optimization: maximize}}\n" + rule
    assert read_sweep(parse_polyaxonfile(HEAD + own)).objective.name == "acc"
    stopping = base + "  random_search: {n_experiments: 3}\n" + rule
    assert read_sweep(parse_polyaxonfile(HEAD + stopping)).objective.name == "loss"
    added = base + "  random_search: {n_experiments: 3}\n  metric: {name: f1, optimization: maximize}\n"
    assert read_sweep(parse_polyaxonfile(HEAD + added)).objective.direction == "maximize"
    none = base + "  random_search: {n_experiments: 3}\n"
    assert read_sweep(parse_polyaxonfile(HEAD + none)).objective is None


#: Bad sections, each with the one message it gives.
BAD = [(case["section"], case["message"]) for case in yaml.safe_load((DATA / "bad_sections.yaml").read_text())]


@pytest.mark.parametrize(("text", "message"), BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_sections_give_one_clear_message(text, message):
    topology, problems = try_parse_polyaxonfile("framework: pytorch\n" + text)
    assert topology is None
    assert [str(p) for p in problems] == [message]


def test_the_docs_typo_in_pvalues_is_explained():
    """The reference writes `[(MeanSquaredError, 0,2), (AbsoluteDifference, 0.8)]`: its tuples are
    read, and the one with a comma for a decimal point is named."""
    text = (
        "hptuning:\n  random_search: {n_experiments: 2}\n  matrix:\n    loss:\n"
        "      pvalues: [(MeanSquaredError, 0,2), (AbsoluteDifference, 0.8)]\n"
    )
    _, problems = try_parse_polyaxonfile(HEAD + text)
    assert [str(p) for p in problems] == [
        "hptuning.matrix.loss.pvalues[0]: '(MeanSquaredError, 0, 2)' is not a [value, probability] pair"
    ]
    fixed = text.replace("0,2", "0.2")
    assert read_sweep(parse_polyaxonfile(HEAD + fixed)).params["loss"].values == [
        "MeanSquaredError",
        "AbsoluteDifference",
    ]


def test_sweep_and_topology_problems_are_reported_together():
    _, problems = try_parse_polyaxonfile(
        "framework: pytorch\nenvironment: {replicas: {n_workers: -1}}\nhptuning: {matrix: {lr: {values: []}}}"
    )
    assert [p.path for p in problems] == ["environment.replicas.n_workers", "hptuning.matrix.lr.values"]


def _sampled(text: str, n: int = 200) -> list[dict]:
    spec = read_sweep(parse_polyaxonfile(HEAD + text))
    study = optuna.create_study(sampler=sampler_for(spec), pruner=pruner_for(spec))
    out = []
    for _ in range(n):
        trial = study.ask()
        out.append(suggest(trial, spec))
        study.tell(trial, 0.0)
    return out


def test_sampled_values_follow_each_kind():
    values = _sampled(V0_EXAMPLES["reference: value forms"].replace("n_experiments: 10", "n_experiments: 200"))
    assert all(v["a"] in (1, 3, 5, 7, 9) for v in values)
    assert all(0 <= v["f"] <= 1 and math.isclose(v["f"] * 10, round(v["f"] * 10)) for v in values)
    assert all(1 <= v["g"] <= math.e for v in values)  # exp(uniform(0, 1))
    assert all(v["k"] > 0 for v in values)  # lognormal
    normal = [v["i"] for v in values]
    assert -1 < sum(normal) / len(normal) < 1 and min(normal) < 0 < max(normal)
    share = sum(v["m"] == "AbsoluteDifference" for v in values) / len(values)
    assert 0.6 < share < 0.95  # drawn with probability 0.8


def test_a_grid_walks_every_combination_once():
    text = "hptuning:\n  matrix:\n    a: {values: [1, 2, 3]}\n    b: {values: [x, [1, 2]]}\n"
    values = _sampled(text, n=6)
    assert sorted((v["a"], str(v["b"])) for v in values) == sorted(
        (a, str(b)) for a in (1, 2, 3) for b in ("x", [1, 2])
    )


def test_hyperband_trials_get_the_resource():
    values = _sampled(V0_EXAMPLES["reference: hyperband"], n=3)
    assert all(v["num_steps"] == 81 for v in values)


def test_the_study_lives_in_a_journal_file_and_resumes(tmp_path):
    spec = read_sweep(parse_polyaxonfile(HEAD + V1_EXAMPLES["random"]))
    study = open_study(spec, tmp_path / "study.journal")
    trial = study.ask()
    suggest(trial, spec)
    study.tell(trial, 1.5)
    reopened = open_study(spec, tmp_path / "study.journal")
    assert [t.value for t in reopened.get_trials()] == [1.5]


def test_logspace_is_numpys_with_an_optional_base():
    params = read_sweep(
        parse_polyaxonfile(
            HEAD + "hptuning:\n  matrix:\n    a: {logspace: '0:2:3'}\n"
            "    b: {logspace: [1, 3, 3, 2]}\n    c: {geomspace: 0.01:0.1:2}\n"
        )
    ).params
    assert params["a"].values == [1, 10, 100] and params["b"].values == [2, 4, 8] and params["c"].values == [0.01, 0.1]
