"""Hyperband with `resume: true` on the local backend: real trials (two-replica PyTorch jobs
following the checkpoint convention), a real controller. Trials kept after a rung run again
with eta times the resource and resume at their checkpoint's step; the others are pruned."""

from __future__ import annotations

import json
import os
import signal

import pytest
from local_support import JOBS, wait_for

import jupyter_px
from jupyter_px.processes.detached import ProcessIdentity
from jupyter_px.runstore.sweeps import SweepState, TrialState
from jupyter_px.sweeps.promotion import brackets

pytestmark = pytest.mark.jobs

TOPOLOGY = """
framework: pytorch
environment:
  replicas:
    n_workers: 1
hptuning:
  concurrency: 3
  seed: 5
  hyperband:
    max_iter: 4
    eta: 2
    resource: {name: num_steps, type: int}
    metric: {name: loss, optimization: minimize}
    resume: true
  matrix:
    lr: {uniform: [0, 1]}
"""


def resumed(run, key: str) -> dict:
    return json.loads((run.paths.outputs_dir / f"resumed-{key}.json").read_text())


def test_promoted_trials_resume_at_their_checkpoints_step(px_home):
    sweep = jupyter_px.sweep(JOBS / "hyperband_resume.py", TOPOLOGY, name="hb")
    status = sweep.wait(timeout=600)
    log = (px_home / "sweeps" / sweep.sweep_id / "controller.log").read_text()
    assert status.state == SweepState.SUCCEEDED, log
    check_hyperband(sweep, status)


def test_a_killed_controller_goes_on_with_the_brackets_without_running_a_rung_twice(px_home, monkeypatch):
    monkeypatch.setenv("HYPERBAND_STEP_SLEEP", "0.4")
    sweep = jupyter_px.sweep(JOBS / "hyperband_resume.py", TOPOLOGY, name="hb-kill")
    wait_for(lambda: any(len(r.runs) > 1 for r in sweep.rows()), timeout=300, what="a promoted trial's run")
    owner = sweep.status().owner
    os.kill(owner.pid, signal.SIGKILL)
    wait_for(lambda: not ProcessIdentity(owner.pid, owner.started_at).alive(), what="the controller to die")
    assert sweep.resume() is True
    status = sweep.wait(timeout=600)
    assert status.state == SweepState.SUCCEEDED, (px_home / "sweeps" / sweep.sweep_id / "controller.log").read_text()
    check_hyperband(sweep, status)
    ran = [(run.record.sweep.trial, run.params["num_steps"]) for run in jupyter_px.runs()]
    assert len(ran) == len(set(ran)) == 14  # each rung of each trial ran once


def check_hyperband(sweep, status) -> None:
    rows = {row.number: row for row in sweep.rows()}
    plan = brackets(4, 2)
    assert len(rows) == sum(b.configs for b in plan) == 10
    runs = {run.run_id: run for run in jupyter_px.runs()}
    promoted = 0
    for bracket in plan:
        members = [rows[n] for n in bracket.numbers]
        for rung in range(len(bracket.resources)):  # how many ran each rung: Hyperband's counts
            expected = bracket.configs if rung == 0 else bracket.keep[rung - 1]
            assert sum(len(m.runs) > rung for m in members) == expected, (bracket, rung)
        for member in members:
            previous = 0
            for rung, run_id in enumerate(member.runs):
                run = runs[run_id]
                assert (
                    run.params["num_steps"] == int(bracket.resources[rung]) and run.params["lr"] == member.params["lr"]
                )
                for key in ("master-0", "worker-0"):  # every replica resumed at its checkpoint's step
                    seen = resumed(run, key)
                    assert seen["resume_step"] == seen["checkpoint_step"] == previous
                    assert seen["steps"] == list(range(previous + 1, int(bracket.resources[rung]) + 1))
                steps = run.metrics()["master-0"]["loss"].steps
                assert steps == list(range(previous + 1, int(bracket.resources[rung]) + 1))
                promoted += rung > 0
                previous = int(bracket.resources[rung])
            # the trial's curve runs on across its runs, step after step
            assert [step for step, _ in member.intermediate] == list(range(1, previous + 1))
            if len(member.runs) == bracket.s + 1:
                assert member.state == TrialState.COMPLETE and member.step == 4
            else:
                assert member.state == TrialState.PRUNED and member.reason.startswith(
                    f"not kept after num_steps {previous}"
                )
        # the kept trials were the best at their rung
        for rung, keep in enumerate(bracket.keep):
            at_rung = [m for m in members if len(m.runs) > rung]
            value = {m.number: dict(m.intermediate)[int(bracket.resources[rung])] for m in at_rung}
            kept = {m.number for m in at_rung if len(m.runs) > rung + 1}
            assert kept == set(sorted(value, key=value.get)[:keep])
    assert promoted == 2 + 1 + 1
    complete = [r for r in rows.values() if r.state == TrialState.COMPLETE]
    assert status.best == min(complete, key=lambda r: r.value).number
