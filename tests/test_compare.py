"""jupyter_px.compare: which runs, which params differ, final and best values, how curves are
downsampled, and the digest cache, over real run directories written through the run store."""

from __future__ import annotations

import math
import os
import re

import numpy as np
import pytest
from compare_support import make_run
from plot_config_support import assert_private

from jupyter_px.compare.comparison import compare_runs
from jupyter_px.compare.selection import SelectionError, select_runs, sweep_objective
from jupyter_px.runstore import RunStore
from jupyter_px.service import RunService
from jupyter_px.service.digests.downsample import MAX_POINTS, MIN_POINTS, check_points, downsample_indices
from jupyter_px.service.digests.params import differing, flatten, run_params
from jupyter_px.service.digests.values import check_optimizations, optimization_for, series_values


@pytest.fixture
def store(tmp_path) -> RunStore:
    return RunStore(tmp_path / "home")


def three_runs(store: RunStore, steps: int = 300) -> list[str]:
    """lr 0.1 learns fastest; every run logs loss (min) and val_acc (max)."""
    ids = []
    for index, lr in enumerate([0.001, 0.1, 0.01]):
        run_id = f"lr-{index}"
        make_run(
            store,
            run_id,
            name=f"sweep-lr-{lr}",
            curves={"loss": lambda k, lr=lr: 1 / (1 + k * lr), "val_acc": lambda k, lr=lr: 1 - 1 / (1 + k * lr)},
            steps=steps,
            params={"lr": lr, "batch": 32},
        )
        ids.append(run_id)
    return ids


# ---- selection --------------------------------------------------------------------------------


def test_selection_by_reference_pattern_and_order(store):
    three_runs(store)
    make_run(store, "other", name="baseline", curves={"loss": float})
    assert select_runs(RunService(store), ["lr-2", "baseline", "lr-2"]) == ["lr-2", "other"]  # names resolve; once each
    assert sorted(select_runs(RunService(store), pattern="sweep-lr-*")) == ["lr-0", "lr-1", "lr-2"]
    assert select_runs(RunService(store), ["other"], pattern="lr-1") == ["other", "lr-1"]  # ids match the glob too
    assert select_runs(RunService(store), ["last"]) == ["other"]


@pytest.mark.parametrize(
    ("refs", "pattern", "message"),
    [
        (["nope"], None, "no run with id or name 'nope'"),
        ([], "zzz-*", "pattern: 'zzz-*' matches no run"),
        ([], "", "pattern: '' matches nothing"),
        ([], None, "no runs to compare"),
    ],
)
def test_selection_refusals_name_what_is_wrong(store, refs, pattern, message):
    three_runs(store)
    with pytest.raises(SelectionError, match=re.escape(message)):
        select_runs(RunService(store), refs, pattern=pattern)


def finished_sweep(store: RunStore, trials: dict[int, str], direction: str) -> str:
    """A finished sweep of `trials` (number -> its run's id) written through the sweep store, as
    its controller leaves it; its objective is `loss`."""
    from jupyter_px.runstore.models import CodeSpec
    from jupyter_px.runstore.sweeps import SweepRecord, SweepState, SweepStatus, TrialRow, TrialState

    sweeps = store.sweeps
    sweep_id = sweeps.new_id("lr-sweep")
    rows = [TrialRow(number=n, state=TrialState.COMPLETE, run_id=r, params={}) for n, r in trials.items()]
    sweeps.create(
        SweepRecord(
            sweep_id=sweep_id, name="lr-sweep", topology={"framework": "pytorch"}, code=CodeSpec(), workdir="."
        ),
        {"main.py": "pass\n"},
        SweepStatus(
            sweep_id=sweep_id,
            state=SweepState.SUCCEEDED,
            n_trials=len(rows),
            objective="loss",
            direction=direction,
            trials=rows,
        ),
    )
    return sweep_id


@pytest.mark.parametrize("direction", ["minimize", "maximize"])
def test_a_sweep_selects_its_trials_and_its_objective_says_which_is_best(store, direction):
    three_runs(store)
    sweep_id = finished_sweep(store, {1: "lr-2", 0: "lr-0"}, direction)
    assert select_runs(RunService(store), sweep="lr-sweep") == ["lr-0", "lr-2"]  # trial order
    assert select_runs(RunService(store), sweep=sweep_id) == ["lr-0", "lr-2"]
    with pytest.raises(SelectionError, match="sweep: 'nope': "):
        select_runs(RunService(store), sweep="nope")
    best = sweep_objective(RunService(store), "lr-sweep", None)
    assert best == {"loss": "min" if direction == "minimize" else "max"}
    assert sweep_objective(RunService(store), "lr-sweep", {"loss": "max", "acc": "max"}) == {
        "loss": "max",
        "acc": "max",
    }
    loss = compare_runs(RunService(store), ["lr-0", "lr-2"], optimization=best).metric("loss")
    assert loss.best_run == ("lr-2" if direction == "minimize" else "lr-0")  # lr 0.01 learns faster


# ---- params -----------------------------------------------------------------------------------


def test_only_params_that_differ_are_shown_by_default(store):
    ids = three_runs(store)
    make_run(store, "wide", curves={"loss": float}, params={"lr": 0.1, "batch": 32}, workers=3)
    comparison = compare_runs(RunService(store), [*ids, "wide"])
    assert comparison.params == ["lr", "topology.environment.replicas.n_workers"]
    assert comparison.hidden_params > 0
    every = compare_runs(RunService(store), [*ids, "wide"], all_params=True)
    assert {"batch", "backend", "lr"} <= set(every.params) and every.hidden_params == 0


def test_differing_counts_a_missing_param_and_orders_logged_before_topology():
    runs = [{"lr": 1, "topology.x": 1, "a": [1]}, {"lr": 1, "topology.x": 2, "a": [1], "extra": None}]
    assert differing(runs) == ["extra", "topology.x"]
    assert differing([{"a": 1.0}, {"a": 1}, {"a": True}]) == ["a"]  # 1.0 == 1, but a flag is not a number
    assert differing([{"a": 1.0}, {"a": 1}]) == []
    assert flatten({"e": {"r": {"n": 2}, "l": [1, 2]}}, "topology") == {"topology.e.r.n": 2, "topology.e.l": "[1, 2]"}


def test_the_chiefs_logged_params_win():
    params = run_params({"worker-0": {"lr": 2, "seed": 7}, "master-0": {"lr": 1}}, {"framework": "pytorch"}, "local")
    assert params == {"lr": 1, "seed": 7, "backend": "local", "topology.framework": "pytorch"}


# ---- final and best ---------------------------------------------------------------------------


def test_final_and_best_values_follow_the_named_optimization(store):
    ids = three_runs(store)
    comparison = compare_runs(RunService(store), ids)
    loss, acc = comparison.metric("loss"), comparison.metric("val_acc")
    assert (loss.optimization, acc.optimization) == ("min", "max")
    assert loss.best_run == "lr-1" and acc.best_run == "lr-1"
    row = next(row for row in comparison.rows() if row["run_id"] == "lr-0")
    assert row["final"]["loss"] == pytest.approx(1 / (1 + 299 * 0.001))
    assert row["best"]["loss"] == row["final"]["loss"] and row["best_step"]["loss"] == 299
    # Saying the other way round moves the best run.
    flipped = compare_runs(RunService(store), ids, optimization={"loss": "max"})
    assert flipped.metric("loss").best_run in ids and flipped.metric("loss").optimization == "max"
    assert next(r for r in flipped.rows() if r["run_id"] == "lr-0")["best"]["loss"] == 1.0


def test_best_value_ignores_nan_and_reports_its_step():
    x = np.arange(6, dtype=float)
    y = np.array([3.0, math.nan, 1.0, 2.0, math.inf, 2.5])
    values = series_values(x, y)
    assert (values.final, values.final_step) == (2.5, 5.0)
    assert values.best("min") == (1.0, 2.0) and values.best("max") == (3.0, 0.0)
    assert series_values(x, np.full(6, math.nan)).best("min") == (None, None)


@pytest.mark.parametrize(
    ("name", "direction"),
    [("loss", "min"), ("val_loss", "min"), ("val_acc", "max"), ("f1", "max"), ("eval/reward", "max"), ("mae", "min")],
)
def test_direction_from_the_metrics_name(name, direction):
    assert optimization_for(name) == direction
    assert optimization_for(name, {name: "max" if direction == "min" else "min"}) != direction


def test_bad_optimization_names_the_metric():
    with pytest.raises(ValueError, match=r"optimization.loss: 'down' is not 'min' or 'max'"):
        check_optimizations({"loss": "down"})


def test_an_unknown_metric_is_refused_with_the_known_ones(store):
    ids = three_runs(store)
    with pytest.raises(ValueError, match=r"metrics: no run has 'acc' \(they have: loss, val_acc\)"):
        compare_runs(RunService(store), ids, metrics=["acc"])


# ---- downsampling -----------------------------------------------------------------------------


@pytest.mark.parametrize("points", [MIN_POINTS, 100, 1000])
def test_downsampling_is_bounded_and_keeps_the_ends_and_the_extremes(points):
    rng = np.random.default_rng(1)
    y = rng.normal(size=100_000).cumsum()
    y[54_321] = 1e6  # a spike decimation would miss
    x = np.arange(len(y), dtype=float)
    chosen = downsample_indices(x, y, points)
    assert len(chosen) <= points
    assert chosen[0] == 0 and chosen[-1] == len(y) - 1
    assert 54_321 in chosen
    if points >= 100:  # with ten buckets, LTTB keeps the spike's, not every bucket's extreme
        assert int(np.argmin(y)) in chosen
    assert np.all(np.diff(chosen) > 0)


def test_downsampling_short_unordered_and_nonfinite_series():
    x = np.array([5.0, 6.0, 7.0])
    assert downsample_indices(x, np.array([1.0, math.nan, 2.0]), 10).tolist() == [0, 2]
    restarted = np.concatenate([np.arange(500.0), np.arange(500.0)])  # steps go back after a restart
    chosen = downsample_indices(restarted, np.sin(np.arange(1000.0)), 50)
    assert 0 < len(chosen) <= 50


@pytest.mark.parametrize("points", [MIN_POINTS - 1, MAX_POINTS + 1, 2.5, True, "100"])
def test_a_bad_bound_is_refused_with_its_value(points):
    with pytest.raises(ValueError, match="points: "):
        check_points(points)


def test_curves_of_long_runs_are_bounded_and_the_values_are_of_the_whole_series(store):
    make_run(store, "long", curves={"loss": lambda k: 1 / (1 + k)}, steps=50_000)
    comparison = compare_runs(RunService(store), ["long"], points=200)
    curve = comparison.metric("loss").curves["long"]
    assert curve.total == 50_000 and len(curve.values) <= 200 and curve.replica == "master-0"
    assert curve.summary.final == pytest.approx(1 / 50_000) and curve.steps[-1] == 49_999


def test_a_run_without_master_metrics_uses_worker_0(store):
    make_run(store, "w", workers=2, worker_curves={"loss": lambda k: k})
    curve = compare_runs(RunService(store), ["w"]).metric("loss").curves["w"]
    assert curve.replica == "worker-0"


# ---- the cache --------------------------------------------------------------------------------


def test_a_digest_is_read_once_until_the_run_changes(store):
    ids = three_runs(store)
    service = RunService(store)  # a server's, or a kernel's: its digest cache is kept for its life
    compare_runs(service, ids)
    compare_runs(service, ids)
    cache = service.digests
    assert cache.reads == 3
    path = store.paths("lr-0").metrics("master", 0)
    with open(path, "a") as handle:
        handle.write('{"step":300,"time":1.0,"metrics":{"loss":0.0001,"val_acc":0.5}}\n')
    os.utime(path, ns=(1, 1))  # a size change alone must do too
    again = compare_runs(service, ids)
    assert cache.reads == 4
    assert again.metric("loss").curves["lr-0"].summary.final == 0.0001
    assert again.metric("loss").best_run == "lr-0"


def test_a_finished_runs_digest_outlives_the_server_that_read_it(store):
    """A server (or notebook) started later does not read every point of a finished run again;
    a run that changed since, or one still running, is read."""
    ids = three_runs(store)
    make_run(store, "live", curves={"loss": lambda k: 1 / (k + 1)}, state="Running")
    server = RunService(store)
    before = compare_runs(server, [*ids, "live"])
    first = server.digests
    assert first.reads == 4
    assert sorted(p.name for p in first.folder.iterdir()) == sorted(f"{i}.500.v3.pickle" for i in ids)

    later_server = RunService(store)  # a new server: nothing in memory
    again = compare_runs(later_server, [*ids, "live"])
    later = later_server.digests
    assert later.reads == 1  # only the running run
    assert again.to_json(arrays=False) == before.to_json(arrays=False)

    path = store.paths("lr-1").metrics("master", 0)
    with open(path, "a") as handle:
        handle.write('{"step":300,"time":1.0,"metrics":{"loss":0.00001}}\n')
    (first.folder / "lr-2.500.v3.pickle").write_bytes(b"cut sh")  # a damaged file is read past
    third_server = RunService(store)
    changed = compare_runs(third_server, [*ids, "live"])
    third = third_server.digests
    assert third.reads == 3  # lr-1 changed, lr-2's file is damaged, live runs
    assert changed.metric("loss").curves["lr-1"].summary.final == 0.00001


# ---- the notebook's views ---------------------------------------------------------------------


def test_the_params_view_puts_each_param_against_the_best_value(store):
    """The params' view (`compare.figures`, the extension's panel and the notebook alike): an
    axis per param that differs (text as categories) and the objective's best value last; the
    importance bars labelled with their correlation, in the neutral look the extension recolors."""
    from jupyter_px.compare.figures import comparison_figures
    from jupyter_px.compare.render import parallel_bundle

    ids = three_runs(store)
    make_run(store, "text", curves={"loss": lambda k: 1.0}, params={"lr": "auto", "batch": 32})
    comparison = compare_runs(RunService(store), ids)
    (trace,) = comparison_figures(comparison).parallel.data
    assert [d["label"] for d in trace["dimensions"]] == ["lr", "loss (best, min)"]  # the first metric (by name)
    assert trace["dimensions"][0]["values"] == [0.001, 0.1, 0.01]
    assert trace["line"]["reversescale"] is True  # the lower loss at the better end

    (trace,) = comparison_figures(compare_runs(RunService(store), [*ids, "text"])).parallel.data
    lr = trace["dimensions"][0]
    assert lr["ticktext"] == ["0.001", "0.01", "0.1", "auto"] and lr["values"] == [0, 2, 1, 3]  # text: categories
    assert comparison_figures(compare_runs(RunService(store), ids[:1])).parallel is None  # one run: nothing to draw

    bundle = parallel_bundle(comparison)
    assert bundle is not None and bundle["application/vnd.plotly.v1+json"]["data"] == [trace_of(comparison)]
    assert_private(bundle["application/vnd.plotly.v1+json"]["config"])


def trace_of(comparison):
    from jupyter_px.compare.figures import parallel_figure

    return parallel_figure(comparison).data[0]


def test_the_importance_bars_say_which_way_each_param_goes():
    from jupyter_px.compare.comparison import Comparison
    from jupyter_px.compare.figures import importance_figure
    from jupyter_px.presentation.colors import REPLICA_COLORS
    from jupyter_px.sweeps.importance import ParamImportance

    importance = [ParamImportance("lr", 0.8, -0.9, 5), ParamImportance("batch", 0.3, 0.4, 5)]
    comparison = Comparison(
        runs=[], metrics=[], params=["lr", "batch"], points=10, importance=importance, objective="loss"
    )
    (bars,) = importance_figure(comparison).data
    assert bars["y"] == ["batch (r +0.40)", "lr (r -0.90)"] and bars["x"] == [0.3, 0.8]  # largest on top
    assert bars["marker"]["color"] == [REPLICA_COLORS[0], REPLICA_COLORS[1]]  # the sign's color
    title = importance_figure(comparison).layout["xaxis"]["title"]["text"]
    assert title == "share of loss's variance each param alone explains (η²)"  # as the sweep view says it
    assert importance_figure(Comparison(runs=[], metrics=[], params=[], points=10)) is None


def test_the_notebook_outputs_are_plotly_and_a_table_marking_the_best_run(store):
    """Every plot is plotly's (no second, hand-drawn SVG twin); where nothing draws plotly (a saved
    notebook on GitHub) the table holds the values, the best marked."""
    from jupyter_px.compare.render import figure_bundle, table_bundle

    comparison = compare_runs(RunService(store), three_runs(store))
    curves = figure_bundle(comparison)
    assert set(curves) == {"application/vnd.plotly.v1+json", "text/plain"}
    assert_private(curves["application/vnd.plotly.v1+json"]["config"])  # no "Share chart..."
    table = table_bundle(comparison)["text/html"]
    assert "<svg" not in table and table.count("data-best='true'") == 2
    text = table_bundle(comparison)["text/plain"]
    assert text.splitlines()[1].startswith("sweep-lr-0.1 (lr-1)")  # best first
    assert "%px_tensorboard lr-0 lr-1 lr-2" in text


def test_best_is_defined_among_the_runs_that_succeeded_or_at_the_common_step(store):
    """Runs of different lengths are not alike: a run stopped at step 20 with the lowest loss seen
    there is not the best of runs that trained 100 steps (the default), except when every run is
    compared at the last step all of them reached, which is said."""
    make_run(store, "long-a", curves={"loss": lambda k: 1.0 - k / 200}, steps=100)  # ends at 0.505
    make_run(store, "long-b", curves={"loss": lambda k: 1.2 - k / 200}, steps=100)
    make_run(store, "short", curves={"loss": lambda k: 0.6 - k / 100}, steps=21, state="Stopped")  # 0.4 at 20
    default = compare_runs(RunService(store), ["long-a", "long-b", "short"]).metric("loss")
    assert default.best_run == "long-a"
    assert default.best_rule == "lowest final value among the 2 runs that succeeded"
    everything = compare_runs(RunService(store), ["long-a", "long-b", "short"], best="all").metric("loss")
    assert everything.best_run == "short" and everything.best_rule == "lowest value of all runs, at any step"
    common = compare_runs(RunService(store), ["long-a", "long-b", "short"], best="common_step").metric("loss")
    assert common.common_step == 20 and common.best_run == "short"
    assert common.best_rule == "lowest at step 20, the last step every run reached"
    with pytest.raises(ValueError, match="best: 'median' is not one of succeeded, common_step, all"):
        compare_runs(RunService(store), ["long-a"], best="median")


def test_a_diverged_or_nan_run_is_never_best_and_the_rule_says_so(store):
    """A run whose loss dipped to 1.77 and then blew up to 43.8 (above where it began) is not the
    best of runs that ended lower (17.4), nor is one whose last value is NaN, under any rule."""
    make_run(store, "diverged", curves={"loss": lambda k: 30 - k * 28.23 / 28 if k <= 28 else 1.77 + (k - 28) * 2})
    make_run(store, "steady", curves={"loss": lambda k: 40 - k * 22.6 / 99})  # ends at 17.4
    make_run(store, "nan", curves={"loss": lambda k: 20 - k * 0.19})  # 1.19 at its last finite step
    with open(store.paths("nan").metrics("master", 0), "a") as handle:
        handle.write('{"step":100,"time":1.0,"metrics":{"loss":NaN}}\n')
    ids = ["diverged", "steady", "nan"]
    default = compare_runs(RunService(store), ids).metric("loss")
    assert default.best_run == "steady", default.best_rule
    assert default.best_rule == (
        "lowest final value among the 1 run that succeeded; "
        "diverged (NaN, or ended worse than it began), never best: diverged, nan"
    )
    assert compare_runs(RunService(store), ids, best="all").metric("loss").best_run == "steady"
    assert compare_runs(RunService(store), ids, best="common_step").metric("loss").best_run == "steady"


def test_a_trials_values_are_columns_of_their_own_and_matter_for_the_objective(store):
    """A sweep trial's values travel in its topology as PX_PARAMS (JSON): the comparison reads
    them as params of their own (`lr`, a column each), never as one column of JSON; and how much
    each accounts for the objective, with the way it goes."""
    import json as json_module
    import time

    from compare_support import write_curves

    from jupyter_px.runstore import ReplicaStatus, RunRecord, RunStatus
    from jupyter_px.runstore.models import TrialOf

    ids = []
    for number, (lr, optimizer) in enumerate([(0.1, "sgd"), (0.2, "sgd"), (0.4, "adam"), (0.8, "adam")]):
        run_id, values = f"trial-{number}", {"lr": lr, "optimizer": optimizer}
        env = {"PX_PARAMS": json_module.dumps(values)}  # as the sweep controller writes it
        topology = {"framework": "pytorch", "environment": {"env": env, "replicas": {"n_workers": 0}}}
        record = RunRecord(run_id=run_id, topology=topology, sweep=TrialOf(sweep_id="sw", trial=number, params=values))
        paths = store.create(record, {"main.py": "pass\n"})
        write_curves(paths.metrics("master", 0), {"loss": lambda k, lr=lr: lr + 1 / (k + 1)}, 50, time.time())
        master = ReplicaStatus(role="master", index=0, state="Succeeded")
        store.write_status(RunStatus(run_id=run_id, state="Succeeded", finished_at=time.time(), replicas=[master]))
        ids.append(run_id)
    comparison = compare_runs(RunService(store), ids)
    assert comparison.params == ["lr", "optimizer"]
    assert not any("PX_PARAMS" in name for name in comparison.params)
    assert [row["params"]["lr"] for row in comparison.rows()] == [0.1, 0.2, 0.4, 0.8]
    assert comparison.objective == "loss"
    importance = {item.param: item for item in comparison.importance}
    assert importance["lr"].correlation == pytest.approx(1.0)  # a higher lr, a higher loss
    assert importance["lr"].importance > 0.9 and importance["optimizer"].correlation is None
    # Each curve carries its points' wall times (x as time in the panel).
    curve = comparison.metric("loss").curves["trial-0"]
    assert len(curve.times) == len(curve.steps) and curve.times[-1] > curve.times[0]


def test_the_notebook_figure_gives_a_run_its_own_color_as_the_sidebar_does(store):
    """A run's color comes from its id, not its place in the list: the same run is drawn in the
    same color in two comparisons that list it differently, and in the color the sidebar's
    comparison gives it (the slots its `runColorSlots` gives, kept in a file jest checks too)."""
    import json
    from pathlib import Path

    from jupyter_px.compare.render import figure
    from jupyter_px.presentation.colors import REPLICA_COLORS, run_color_slots

    shared = Path(__file__).parents[1] / "labextension" / "src" / "__tests__" / "runColorSlots.json"
    sidebar = json.loads(shared.read_text(encoding="utf-8"))
    assert run_color_slots(sidebar["run_ids"]) == sidebar["slots"]

    ids = three_runs(store)
    for run_id in ["c-0", "zz-late"]:
        make_run(store, run_id, curves={"loss": lambda k: 1 / (1 + k)}, steps=50, params={"lr": 0.5})

    def colors(selection: list[str]) -> dict[str, str]:
        drawn = figure(compare_runs(RunService(store), selection)).data
        return {trace.meta["run_id"]: trace.line.color for trace in drawn}

    wide = colors([*ids, "c-0", "zz-late"])
    narrow = colors(["zz-late", ids[2]])
    assert narrow == {run_id: wide[run_id] for run_id in narrow}  # kept across comparisons
    slots = run_color_slots([*ids, "c-0", "zz-late"])
    assert wide == {run_id: REPLICA_COLORS[slot] for run_id, slot in slots.items()}
    assert len(set(wide.values())) == 5
