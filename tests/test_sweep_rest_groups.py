"""`GET px/api/sweeps?trials=true`, the sidebar's one request for its sweep groups, against the
real jupyter_server over a finished sweep written by the store's own code (ui-tests/make_sweep.py,
the script the browser tests use)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_px.server import models

pytest_plugins = ["pytest_jupyter.jupyter_server"]

MAKE_SWEEP = Path(__file__).resolve().parents[1] / "ui-tests" / "make_sweep.py"


@pytest.fixture
def jp_server_config(px_home):
    return {"ServerApp": {"jpserver_extensions": {"jupyter_px": True}}, "JupyterPxApp": {"keeper_interval": 0}}


@pytest.fixture
def sweep_id(px_home) -> str:
    done = subprocess.run(
        [sys.executable, str(MAKE_SWEEP), "lr search", "3"], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


async def get_json(jp_fetch, *parts, **kwargs):
    return json.loads((await jp_fetch(*parts, **kwargs)).body)


async def test_the_list_with_trials_names_each_trials_run(jp_fetch, sweep_id):
    listing = await get_json(jp_fetch, "px/api/sweeps", params={"trials": "true"})
    models.SweepsPage.model_validate(listing)
    (sweep,) = listing["sweeps"]
    assert sweep["sweep_id"] == sweep_id and sweep["name"] == "lr search" and sweep["state"] == "Succeeded"
    assert [t["run_id"] for t in sweep["trials"]] == [f"{sweep_id}-t{n}" for n in range(3)]
    assert sweep["best"] == 2 and sweep["trials"][2]["value"] == pytest.approx(1 / 3)
    runs = await get_json(jp_fetch, "px/api/runs")
    assert {run["run_id"] for run in runs["runs"]} == {t["run_id"] for t in sweep["trials"]}


async def test_the_list_leaves_trials_out_unless_asked(jp_fetch, sweep_id):
    (sweep,) = (await get_json(jp_fetch, "px/api/sweeps"))["sweeps"]
    assert "trials" not in sweep and sweep["counts"] == {"Complete": 3}
    detail = await get_json(jp_fetch, "px/api/sweeps", sweep_id)
    models.Sweep.model_validate(detail)
    assert len(detail["trials"]) == 3


async def test_a_bad_trials_argument_is_named(jp_fetch, sweep_id):
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch("px/api/sweeps", params={"trials": "yes"})
    assert caught.value.code == 400
    assert "trials: 'yes' is not true or false" in caught.value.response.body.decode()


async def test_a_diverged_trial_is_served_with_its_values_named(jp_fetch, px_home):
    """A trial whose loss became infinite: stored as such, served as null + `nonfinite` (JSON has
    no Infinity), never a 500."""
    import math

    from jupyter_px.runstore.models import CodeSpec
    from jupyter_px.runstore.sweeps import SweepRecord, SweepState, SweepStatus, SweepStore, TrialRow, TrialState

    store = SweepStore()
    sweep_id = store.new_id("diverges")
    trials = [
        TrialRow(number=0, state=TrialState.COMPLETE, params={"lr": 0.1}, value=0.5, intermediate=[(1, 0.5)]),
        TrialRow(
            number=1,
            state=TrialState.COMPLETE,
            params={"lr": 10.0},
            value=math.inf,
            values={"loss": math.inf},
            intermediate=[(1, 3.0), (2, math.inf), (3, math.nan)],
        ),
    ]
    record = SweepRecord(sweep_id=sweep_id, topology={"framework": "pytorch"}, code=CodeSpec(), workdir=".")
    status = SweepStatus(sweep_id=sweep_id, state=SweepState.SUCCEEDED, n_trials=2, objective="loss", trials=trials)
    store.create(record, {"main.py": "pass\n"}, status)
    assert store.status(sweep_id).trials[1].value == math.inf  # it round-trips through status.json
    detail = await get_json(jp_fetch, "px/api/sweeps", sweep_id)
    models.Sweep.model_validate(detail)
    diverged = detail["trials"][1]
    assert diverged["value"] is None and diverged["values"] == {"loss": None}
    assert diverged["intermediate"] == [[1, 3.0], [2, None], [3, None]]
    assert diverged["nonfinite"] == {
        "value": "Infinity",
        "values.loss": "Infinity",
        "intermediate.1": "Infinity",
        "intermediate.2": "NaN",
    }
    assert "nonfinite" not in detail["trials"][0]
