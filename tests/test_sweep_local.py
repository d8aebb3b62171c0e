"""Sweeps on the local backend, end to end: real trials (two-replica PyTorch DDP jobs), a real
detached controller, a real Optuna journal. Slow (the `jobs` lane)."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
from local_support import JOBS, assert_nothing_left, wait_for

import jupyter_px
from jupyter_px.processes.detached import ProcessIdentity
from jupyter_px.runstore import RunState
from jupyter_px.runstore.sweeps import SweepState, TrialState

pytestmark = pytest.mark.jobs

SWEEP_TIMEOUT_S = 240

TOPOLOGY = """
framework: pytorch
environment:
  replicas:
    n_workers: 1
hptuning:
  concurrency: 2
  seed: 11
  random_search:
    n_experiments: {n}
  matrix:
    lr:
      uniform: 0.001:0.2
    steps:
      values: [{steps}]
  early_stopping:
    - metric: loss
      optimization: minimize
      policy: {{kind: median, evaluation_interval: 1, min_interval: 1, min_samples: 1}}
"""


#: Trial states that are not final (a trial whose run waits in a queue is Pending).
UNFINISHED = (TrialState.PENDING, TrialState.RUNNING)


def _trial_runs(sweep):
    return {run.record.sweep.trial: run for run in sweep.trials()}


def _max_overlap(runs) -> int:
    """The most runs that were unfinished at one moment (from submission to their end)."""
    spans = [(run.record.created_at, run.status().finished_at or time.time()) for run in runs]
    return max(sum(1 for s, e in spans if s <= start < e) for start, _ in spans)


def test_a_random_search_of_ddp_trials_runs_to_the_end(px_home):
    sweep = jupyter_px.sweep(JOBS / "sweep_trial.py", TOPOLOGY.format(n=6, steps=5), name="rs")
    status = sweep.wait(timeout=SWEEP_TIMEOUT_S)
    log = (px_home / "sweeps" / sweep.sweep_id / "controller.log").read_text()
    assert status.state == SweepState.SUCCEEDED, log
    rows = sweep.rows()
    assert [r.number for r in rows] == list(range(6))
    assert {r.state for r in rows} <= {TrialState.COMPLETE, TrialState.PRUNED}
    runs = _trial_runs(sweep)
    assert sorted(runs) == list(range(6))
    assert _max_overlap(list(runs.values())) <= 2
    for row in rows:
        run = runs[row.number]
        assert run.params == row.params and set(row.params) == {"lr", "steps"}
        for key in ("master-0", "worker-0"):  # every replica saw its trial's values, three ways
            seen = json.loads((run.paths.outputs_dir / f"seen-{key}.json").read_text())
            assert seen == {"get_params": row.params, "env": row.params, "globals": row.params}
        assert_nothing_left(run)
        if row.state == TrialState.PRUNED:  # the whole gang was stopped, at the step recorded
            final = run.status()
            assert final.state == RunState.STOPPED
            assert all(r.state.value in ("Stopped", "Succeeded") for r in final.replicas)
            assert row.reason == f"pruned at step {row.step} (loss {row.value:g})"
            assert row.step is not None and row.step <= 5  # the last step too: stopped before it ended
        else:
            assert runs[row.number].status().state == RunState.SUCCEEDED
            assert row.value == run.metrics()["master-0"]["loss"].values[-1]
    complete = [r for r in rows if r.state == TrialState.COMPLETE]
    best = min(complete, key=lambda r: r.value)
    assert sweep.best.run_id == best.run_id and status.best == best.number
    frame = sweep.dataframe()
    assert list(frame["number"]) == list(range(6)) and "params_lr" in frame.columns
    assert jupyter_px.Sweep("rs").sweep_id == jupyter_px.Sweep("last").sweep_id == sweep.sweep_id


def _waited(sweep, px_home) -> str:
    """What a test that waited too long shows: the controller's log and every trial's run."""
    log = px_home / "sweeps" / sweep.sweep_id / "controller.log"
    rows = "\n".join(f"  trial {r.number}: {r.state.value} run {r.run_id} {r.reason or ''}" for r in sweep.rows())
    runs = "\n".join(f"  {run.run_id}: {run.status().state.value} {run.status().message}" for run in jupyter_px.runs())
    return f"trials:\n{rows}\nruns:\n{runs}\ncontroller.log ends:\n{log.read_text()[-3000:] if log.exists() else ''}"


@pytest.mark.timeout(2 * SWEEP_TIMEOUT_S + 60)
def test_a_killed_controller_resumes_without_rerunning_finished_trials(px_home, monkeypatch):
    monkeypatch.setenv("SWEEP_TRIAL_SLEEP", "0.8")
    sweep = jupyter_px.sweep(JOBS / "sweep_trial.py", TOPOLOGY.format(n=5, steps=4), name="kill")
    finished_first = wait_for(
        lambda: [r for r in sweep.rows() if r.state not in UNFINISHED] and sweep.rows(),
        timeout=SWEEP_TIMEOUT_S,
        what="a first finished trial",
    )
    owner = sweep.status().owner
    os.kill(owner.pid, signal.SIGKILL)
    wait_for(lambda: not ProcessIdentity(owner.pid, owner.started_at).alive(), what="the controller to die")
    view = sweep.service.view(sweep.sweep_id)
    assert view.owner_problem and "is gone" in view.owner_problem
    before = {r.number: (r.run_id, r.state) for r in finished_first if r.state not in UNFINISHED}
    assert sweep.resume() is True
    assert sweep.resume() is False  # one owner: a second start finds it running
    try:
        status = sweep.wait(timeout=SWEEP_TIMEOUT_S)
    except TimeoutError as error:
        raise AssertionError(f"{error}\n{_waited(sweep, px_home)}") from None
    assert status.state == SweepState.SUCCEEDED, _waited(sweep, px_home)
    rows = {r.number: r for r in sweep.rows()}
    assert sorted(rows) == list(range(5))
    for number, (run_id, state) in before.items():
        assert (rows[number].run_id, rows[number].state) == (run_id, state)
    trial_numbers = [run.record.sweep.trial for run in jupyter_px.runs()]
    assert sorted(trial_numbers) == list(range(5))  # no trial ran twice


def test_stop_stops_the_running_trials(px_home, monkeypatch):
    monkeypatch.setenv("SWEEP_TRIAL_SLEEP", "2")
    sweep = jupyter_px.sweep(JOBS / "sweep_trial.py", TOPOLOGY.format(n=4, steps=20), name="stopme")
    wait_for(lambda: len(sweep.trials()) == 2, timeout=120, what="two trials")
    status = sweep.stop()
    assert status.state == SweepState.STOPPED
    runs = sweep.trials()
    assert len(runs) == 2
    for run in runs:
        assert run.status().state.finished
        assert_nothing_left(run)
    assert {r.state for r in sweep.rows()} == {TrialState.STOPPED}


def test_trials_failing_the_same_way_stop_the_sweep_and_say_why(px_home, tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("from jupyter_px import tracking\nraise ValueError(f\"bad: {'x' in tracking.get_params()}\")\n")
    topology = """
hptuning:
  concurrency: 1
  grid_search: {n_experiments: 5}
  matrix:
    x: {values: [1, 2, 3, 4, 5, 6]}
"""
    sweep = jupyter_px.sweep(script, topology)
    status = sweep.wait(timeout=SWEEP_TIMEOUT_S)
    assert status.state == SweepState.FAILED
    assert status.message == "the first 3 trials all failed the same way: ValueError: bad: True"
    assert len(sweep.rows()) == 3


def test_a_topology_without_a_sweep_is_refused(px_home):
    with pytest.raises(ValueError, match="this topology has no sweep"):
        jupyter_px.sweep(JOBS / "sweep_trial.py", "framework: pytorch")


def test_a_sweep_whose_trials_all_failed_differently_fails(px_home, tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("raise ValueError(f'bad {x}')\n")
    topology = "hptuning:\n  matrix:\n    x: {values: [1, 2]}\n"
    status = jupyter_px.sweep(script, topology).wait(timeout=SWEEP_TIMEOUT_S)
    assert status.state == SweepState.FAILED
    assert status.message.startswith("all 2 trials failed (the last: ValueError: bad ")


GRID = """
hptuning:
  concurrency: 2
  grid_search: {n_experiments: 4}
  matrix:
    x: {values: [1.135, 1.195, 2.5]}
    y: {values: [0.2, 0.5]}
  metric: {name: loss, optimization: minimize}
"""


def test_a_grid_with_n_experiments_runs_its_first_n_the_same_each_time(px_home, tmp_path):
    """Polyaxon's grid: the product of the matrix in the order written (the last parameter
    changing fastest), the first `n_experiments` of it; the same file twice runs the same trials."""
    script = tmp_path / "xy.py"
    script.write_text("from jupyter_px import tracking\ntracking.log_metrics(step=1, loss=x * y)\n")
    expected = [{"x": 1.135, "y": 0.2}, {"x": 1.135, "y": 0.5}, {"x": 1.195, "y": 0.2}, {"x": 1.195, "y": 0.5}]
    for _ in range(2):
        sweep = jupyter_px.sweep(script, GRID)
        assert sweep.wait(timeout=SWEEP_TIMEOUT_S).state == SweepState.SUCCEEDED
        assert [row.params for row in sweep.rows()] == expected
        assert sorted(run.params["x"] * run.params["y"] for run in sweep.trials()) == sorted(
            p["x"] * p["y"] for p in expected
        )
