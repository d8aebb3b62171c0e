"""The sweep's view-model (what a tuner looks at) from a real Optuna study asked and told through
the sweep's own engine, written into a status as the controller writes it (`snapshot`): every
view's numbers checked against the trials they come from."""

from __future__ import annotations

import math

import pytest

from jupyter_px.runstore.sweeps import SweepStatus
from jupyter_px.sweeps.engine import open_study
from jupyter_px.sweeps.snapshot import snapshot
from jupyter_px.sweeps.space import suggest
from jupyter_px.sweeps.spec import parse_polyaxonfile, read_sweep
from jupyter_px.sweeps.view_model import GRID, SweepViewModel, build_view_model

MATRIX = """
  matrix:
    lr: {loguniform: [-7, -1]}
    dropout: {uniform: [0, 0.5]}
    act: {values: [relu, tanh, gelu]}
"""


def loss(v: dict) -> float:
    """The learning rate matters most; the activation a little; dropout nothing."""
    return (math.log(v["lr"]) + 4) ** 2 + {"relu": 0.0, "tanh": 0.3, "gelu": 0.1}[v["act"]]


def throughput(v: dict) -> float:
    return 1000 * v["lr"] ** 0.5 + 10 * v["dropout"]


def swept(tmp_path, section: str, objective, n: int, failed: tuple[int, ...] = ()) -> tuple[SweepViewModel, list]:
    import optuna

    spec = read_sweep(parse_polyaxonfile("hptuning:\n  seed: 3\n" + section + MATRIX))
    study = open_study(spec, tmp_path / "study.journal")
    told = []
    for _ in range(n):
        trial = study.ask()
        values = suggest(trial, spec)
        trial.set_user_attr("params", values)
        if trial.number in failed:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            continue
        result = objective(values)
        study.tell(trial, result)
        told.append((trial.number, values, result))
    status = snapshot(study, spec, SweepStatus(sweep_id="sweep-1"))
    return build_view_model("sweep-1", "vm", status, spec), told


def test_a_single_objective_sweeps_views(tmp_path):
    section = "  random_search: {n_experiments: 40}\n  metric: {name: loss, optimization: minimize}\n"
    model, told = swept(tmp_path, section, loss, 42, failed=(5, 17))
    assert model.complete == 40 and model.counts == {"Complete": 40, "Failed": 2} and model.missing == {}
    (history,) = model.history
    assert [p.trial for p in history.points] == [number for number, _, _ in told]  # failed trials left out
    running = math.inf
    for point, (_, _, value) in zip(history.points, told, strict=True):
        running = min(running, value)
        assert point.value == value and point.best == running
    assert model.best == min(told, key=lambda t: t[2])[0]
    (importance,) = model.importance
    assert list(importance.params)[0] == "lr" and importance.params["lr"] > importance.params["dropout"]
    assert all(0 <= share <= 1 for share in importance.params.values()) and importance.evaluator == "eta-squared"
    axes = {axis.name: axis for axis in model.parallel.axes}
    assert list(axes) == ["lr", "dropout", "act", "loss"] and axes["lr"].log and not axes["dropout"].log
    assert axes["act"].categorical and axes["act"].categories == ["gelu", "relu", "tanh"]
    for position, (number, values, value) in enumerate(told):
        assert model.parallel.trials[position] == number
        assert axes["lr"].values[position] == values["lr"] and axes["loss"].values[position] == value
        assert axes["act"].categories[axes["act"].values[position]] == values["act"]
    slices = {s.param: s for s in model.slices}
    assert slices["dropout"].x == [v["dropout"] for _, v, _ in told] and slices["dropout"].y == [r for *_, r in told]
    contour = model.contour
    assert (contour.x_param, contour.y_param) == ("lr", "dropout") and contour.x_log and not contour.y_log
    assert len(contour.grid_x) == len(contour.grid_y) == GRID and len(contour.grid_z) == GRID
    assert contour.grid_x[0] == pytest.approx(min(contour.x)) and contour.grid_x[-1] == pytest.approx(max(contour.x))
    assert min(contour.z) <= min(min(row) for row in contour.grid_z) + 1e-9  # interpolated between the trials
    assert max(max(row) for row in contour.grid_z) <= max(contour.z) + 1e-9
    assert model.pareto is None
    SweepViewModel.model_validate_json(model.model_dump_json())  # one JSON shape, read back the same


def test_a_two_objective_sweeps_views_and_its_pareto_front(tmp_path):
    section = (
        "  nsga2: {n_experiments: 24, population_size: 8}\n"
        "  metrics: [{name: loss, optimization: minimize}, {name: throughput, optimization: maximize}]\n"
    )
    model, told = swept(tmp_path, section, lambda v: [loss(v), throughput(v)], 24)
    assert [o.name for o in model.objectives] == ["loss", "throughput"] and model.best is None
    assert [h.objective for h in model.history] == ["loss", "throughput"]
    assert model.history[1].points[-1].best == max(r[1] for *_, r in told)
    assert [i.objective for i in model.importance] == ["loss", "throughput"]
    assert list(model.importance[0].params)[0] == "lr"
    points = {number: tuple(result) for number, _, result in told}

    def dominated(p):
        return any(q[0] <= p[0] and q[1] >= p[1] and q != p for q in points.values())

    front = {number for number, p in points.items() if not dominated(p)}
    assert set(model.pareto.front) == front
    assert {p.trial for p in model.pareto.points if p.on_front} == front
    assert {p.trial: tuple(p.values) for p in model.pareto.points} == points


def test_too_few_trials_say_why_a_view_is_missing(tmp_path):
    section = "  random_search: {n_experiments: 2}\n  metric: {name: loss, optimization: minimize}\n"
    model, _ = swept(tmp_path, section, loss, 2)
    assert model.importance is None and model.contour is None
    assert set(model.missing) == {"importance", "contour"}
    assert model.missing["importance"].startswith(
        "parameter importance needs 3 complete trials and a parameter that varies (here 2"
    )
    assert model.missing["contour"].startswith(
        "a contour needs three complete trials and two parameters that vary (here 2 and"
    )
    assert len(model.history[0].points) == 2 and model.parallel is not None  # drawn from what there is


def test_a_sweep_without_a_complete_trial_says_so_for_each_view(tmp_path):
    section = (
        "  random_search: {n_experiments: 2}\n"
        "  metrics: [{name: loss, optimization: minimize}, {name: throughput, optimization: maximize}]\n"
    )
    model, _ = swept(tmp_path, section, lambda v: (loss(v), throughput(v)), 2, failed=(0, 1))
    assert model.complete == 0 and model.parallel is None and model.slices == []
    assert (
        model.missing["history"] == model.missing["parallel"] == model.missing["pareto"] == "no trial has completed yet"
    )
    assert set(model.missing) == {"history", "importance", "parallel", "slices", "contour", "pareto"}


def test_the_sweep_view_and_the_comparison_compute_one_importance(capfd):
    """The sweep view's importance is the comparison's calculation over the same values (eta
    squared of each trial's objective), labelled as what it is; building it prints nothing (Optuna's
    "A new study created in memory" showed as red stderr in the cell)."""
    from jupyter_px.runstore.sweeps import TrialRow, TrialState
    from jupyter_px.sweeps.importance import param_importance

    spec = read_sweep(
        parse_polyaxonfile(
            "hptuning:\n  seed: 3\n  random_search: {n_experiments: 12}\n"
            "  metric: {name: loss, optimization: minimize}\n" + MATRIX
        )
    )
    params = [{"lr": 10 ** -(1 + i % 4), "dropout": 0.1 * (i % 3), "act": ["relu", "tanh"][i % 2]} for i in range(12)]
    trials = [
        TrialRow(number=i, state=TrialState.COMPLETE, params=p, value=loss(p), values={"loss": loss(p)})
        for i, p in enumerate(params)
    ]
    capfd.readouterr()
    model = build_view_model("sweep-1", "vm", SweepStatus(sweep_id="sweep-1", trials=trials), spec)
    (importance,) = model.importance
    expected = param_importance(params, [loss(p) for p in params], ["lr", "dropout", "act"])
    assert importance.params == {i.param: i.importance for i in expected}
    assert importance.evaluator == "eta-squared" and list(importance.params)[0] == "lr"
    captured = capfd.readouterr()
    assert "A new study created" not in captured.err + captured.out


def test_a_choice_of_numbers_is_categorical_in_every_view():
    """`momentum: {values: [0.0, 0.9]}` is two categories, not a continuous axis from 0 to 0.9:
    the parallel coordinates tick it at its two values, the slices place each trial on one."""
    from jupyter_px.runstore.sweeps import TrialRow, TrialState

    spec = read_sweep(
        parse_polyaxonfile(
            "hptuning:\n  grid_search: {n_experiments: 6}\n  metric: {name: loss, optimization: minimize}\n"
            "  matrix:\n    lr: {values: [0.1, 0.01, 0.001]}\n    momentum: {values: [0.0, 0.9]}\n"
            "    act: {values: [relu, tanh]}\n"
        )
    )
    params = [{"lr": lr, "momentum": m, "act": a} for lr in (0.1, 0.01, 0.001) for m in (0.0, 0.9) for a in ("relu",)]
    trials = [
        TrialRow(number=i, state=TrialState.COMPLETE, params=p, value=p["lr"] + p["momentum"], values={"loss": 1.0})
        for i, p in enumerate(params)
    ]
    for i, t in enumerate(trials):
        t.values = {"loss": params[i]["lr"] * (1 + params[i]["momentum"])}
    model = build_view_model("s", None, SweepStatus(sweep_id="s", trials=trials), spec)
    axes = {axis.name: axis for axis in model.parallel.axes}
    assert axes["momentum"].categorical and axes["momentum"].categories == ["0.0", "0.9"]
    assert axes["lr"].categorical and axes["lr"].categories == ["0.001", "0.01", "0.1"]  # in numeric order
    assert axes["momentum"].values == [0, 1, 0, 1, 0, 1]
    momentum = next(s for s in model.slices if s.param == "momentum")
    assert momentum.categorical and momentum.categories == ["0.0", "0.9"]
