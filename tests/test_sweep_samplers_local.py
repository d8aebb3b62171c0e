"""The model-based searches and ASHA in a real sweep (a real controller, real trials on the
local backend): the controller process runs Optuna's GP, CMA-ES and successive-halving code."""

from __future__ import annotations

import pytest
from local_support import JOBS

import jupyter_px
from jupyter_px.runstore import RunState
from jupyter_px.runstore.sweeps import SweepState, TrialState

pytestmark = pytest.mark.jobs

TIMEOUT_S = 400


@pytest.mark.parametrize(
    "search",
    [
        "bo: {n_initial_trials: 2, n_iterations: 2, metric: {name: loss, optimization: minimize}}",
        "cmaes: {n_experiments: 4, n_initial_trials: 1, sigma0: 0.2}\n  metric: {name: loss, optimization: minimize}",
    ],
    ids=["bo", "cmaes"],
)
def test_a_model_based_search_runs_its_trials(px_home, monkeypatch, search):
    monkeypatch.setenv("STEPS_TRIAL_SLEEP", "0")
    topology = f"hptuning:\n  concurrency: 2\n  seed: 1\n  {search}\n  matrix:\n    lr: {{uniform: [0, 1]}}\n"
    sweep = jupyter_px.sweep(JOBS / "steps_trial.py", topology)
    status = sweep.wait(timeout=TIMEOUT_S)
    log = (px_home / "sweeps" / sweep.sweep_id / "controller.log").read_text()
    assert status.state == SweepState.SUCCEEDED, log
    rows = sweep.rows()
    assert [r.state for r in rows] == [TrialState.COMPLETE] * 4
    for row, run in zip(rows, sweep.trials(), strict=True):
        assert row.value == pytest.approx(abs(row.params["lr"] - 0.3) * 10 + 1 / 4)
        assert run.params == row.params
    assert status.best == min(rows, key=lambda r: r.value).number


def test_asha_stops_the_trials_that_fall_behind_at_a_rung(px_home):
    """Seed 3 samples lr 0.55, 0.71, 0.29, 0.51, 0.89, 0.90: the last two, far from 0.3, reach
    the first rung after a better trial did and are stopped there (the whole run)."""
    topology = """
hptuning:
  concurrency: 2
  seed: 3
  asha: {n_experiments: 6, max_iter: 9, min_iter: 1, eta: 3, resource: {name: num_steps},
         metric: {name: loss, optimization: minimize}}
  matrix:
    lr: {uniform: [0, 1]}
"""
    sweep = jupyter_px.sweep(JOBS / "steps_trial.py", topology)
    status = sweep.wait(timeout=TIMEOUT_S)
    assert status.state == SweepState.SUCCEEDED, status.message
    rows = {r.number: r for r in sweep.rows()}
    runs = {run.record.sweep.trial: run for run in sweep.trials()}
    assert all(r.params["num_steps"] == 9 for r in rows.values())  # every trial gets max_iter
    pruned = [r for r in rows.values() if r.state == TrialState.PRUNED]
    assert {4, 5} <= {r.number for r in pruned}
    for row in pruned:
        assert row.step in (1, 3) and row.reason == f"pruned at step {row.step} (loss {row.value:g})"
        assert runs[row.number].status().state == RunState.STOPPED
    assert rows[2].state == TrialState.COMPLETE and status.best == 2
