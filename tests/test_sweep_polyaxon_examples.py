"""Polyaxon's own grid and random-search examples with `declarations:` run as printed: real
trials on the local backend, each replica checked for the declarations and its trial's values
(as `tracking.get_params()`, `PX_PARAMS`, globals, and `{{ name }}` in its arguments); and a
single run of a file with declarations gets them the same way."""

from __future__ import annotations

import itertools
import json

import pytest
from local_support import JOBS
from test_sweep_polyaxon_sections import example

import jupyter_px
from jupyter_px.runstore import RunState
from jupyter_px.runstore.sweeps import SweepState, TrialState
from jupyter_px.sweeps.spec import parse_polyaxonfile, read_sweep

pytestmark = pytest.mark.jobs

TRAIN = JOBS / "polyaxon" / "train.py"
TIMEOUT_S = 300


def seen(run, key: str = "master-0") -> dict:
    return json.loads((run.paths.outputs_dir / f"seen-{key}.json").read_text())


def argv_values(args: dict) -> dict:
    return {"batch_size": args["batch_size"], "lr": args["lr"], "dropout": args["dropout"]}


def check_every_replica(run, values: dict, replicas: tuple[str, ...] = ("master-0",)) -> None:
    for key in replicas:
        got = seen(run, key)
        assert got["get_params"] == got["env"] == got["globals"] == values
        assert argv_values(got["args"]) == {k: values[k] for k in ("batch_size", "lr", "dropout")}


@pytest.mark.parametrize("head", ["", "framework: pytorch\nenvironment: {replicas: {n_workers: 1}}\n"])
def test_the_grid_example_runs_as_printed(px_home, head):
    """As printed (one replica), and with a two-replica PyTorch job in front of it."""
    sweep = jupyter_px.sweep(TRAIN, head + example("grid_search.yaml"))
    status = sweep.wait(timeout=TIMEOUT_S)
    assert status.state == SweepState.SUCCEEDED, status.message
    rows = sweep.rows()
    lr = read_sweep(parse_polyaxonfile(example("grid_search.yaml"))).params["lr"].values  # logspace 0.01:0.1:5
    assert lr[:2] == pytest.approx([10**0.01, 10**0.0325])
    first_four = [{"lr": value, "dropout": d} for value, d in itertools.product(lr, [0.2, 0.5])][:4]
    assert [row.params for row in rows] == first_four
    replicas = ("master-0", "worker-0") if head else ("master-0",)
    for row, run in zip(rows, sweep.trials(), strict=True):
        assert row.state == TrialState.COMPLETE and run.status().state == RunState.SUCCEEDED
        check_every_replica(run, {"batch_size": 128, **row.params}, replicas)


def test_the_random_search_example_runs_as_printed_until_its_early_stopping(px_home):
    sweep = jupyter_px.sweep(TRAIN, example("random_search.yaml"))
    status = sweep.wait(timeout=TIMEOUT_S)
    assert status.state == SweepState.SUCCEEDED, status.message
    rows = {row.number: row for row in sweep.rows()}
    runs = {run.record.sweep.trial: run for run in sweep.trials()}
    assert status.message.startswith("early stopping: trial ") and "accuracy" in status.message
    stopper = rows[int(status.message.split()[3])]
    assert stopper.params["param1"] >= 0.5 and stopper.state == TrialState.COMPLETE
    assert len(rows) < 40
    for number, row in rows.items():
        if row.state != TrialState.COMPLETE:
            continue
        check_every_replica(runs[number], {"batch_size": 128, **row.params})
        args = seen(runs[number])["args"]
        assert args["activation"] == row.params["activation"] in ("elu", "relu", "sigmoid")
        assert args["param1"] == row.params["param1"]


def test_one_run_of_a_file_with_declarations_gets_them_like_a_trial(px_home):
    topology = (
        "framework: pytorch\nenvironment: {replicas: {n_workers: 1}}\n"
        "declarations: {batch_size: 32, lr: 0.5, dropout: 0.1}\n"
        "run:\n  cmd: python3 train.py --batch-size={{ batch_size }} --lr={{ lr }} --dropout={{ dropout }}\n"
    )
    run = jupyter_px.submit(TRAIN, topology)
    assert run.wait(timeout=TIMEOUT_S).state == RunState.SUCCEEDED
    check_every_replica(run, {"batch_size": 32, "lr": 0.5, "dropout": 0.1}, ("master-0", "worker-0"))
