"""The sweeps' REST routes against the real jupyter_server (pytest-jupyter), over real sweeps
(single-process trials, a real controller)."""

from __future__ import annotations

import json

import pytest
from jupyter_server.auth import Authorizer
from local_support import JOBS
from tornado.httpclient import HTTPClientError
from waiting import wait_for

import jupyter_px
from jupyter_px.presentation.sweep_figures import sweep_figures

pytest_plugins = ["pytest_jupyter.jupyter_server"]
pytestmark = pytest.mark.jobs

QUICK = """
hptuning:
  concurrency: 2
  matrix:
    x: {values: [1, 3]}
  metric: {name: loss, optimization: minimize}
"""


@pytest.fixture
def jp_server_config(px_home):
    return {"ServerApp": {"jpserver_extensions": {"jupyter_px": True}}, "JupyterPxApp": {"keeper_interval": 0}}


async def get_json(jp_fetch, *parts, **kwargs):
    response = await jp_fetch(*parts, **kwargs)
    return json.loads(response.body)


async def test_list_show_and_stop(jp_fetch, px_home, tmp_path):
    done = jupyter_px.sweep(JOBS / "sweep_quick.py", QUICK, name="quick")
    done.wait(timeout=300)
    slow_script = tmp_path / "slow.py"
    slow_script.write_text("import time\ntime.sleep(120)\n")
    slow = jupyter_px.sweep(slow_script, QUICK, name="slow")
    wait_for(lambda: len(slow.trials()) >= 2, "the slow sweep's second trial", 60, poll=0.2)

    listing = await get_json(jp_fetch, "px/api/sweeps")
    assert [s["name"] for s in listing["sweeps"]] == ["slow", "quick"]
    assert "trials" not in listing["sweeps"][0]
    detail = await get_json(jp_fetch, "px/api/sweeps/quick")
    assert detail["state"] == "Succeeded" and detail["objective"] == "loss" and detail["direction"] == "minimize"
    assert sorted(t["params"]["x"] for t in detail["trials"]) == [1, 3]
    best = detail["trials"][detail["best"]]
    assert best["params"] == {"x": 3} and best["value"] == pytest.approx(1 / 3)

    stopped = await get_json(jp_fetch, "px/api/sweeps/slow", method="DELETE")
    assert stopped["state"] == "Stopped"
    assert {t["state"] for t in stopped["trials"]} == {"Stopped"}
    assert all(run.status().state.value == "Stopped" for run in slow.trials())

    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch("px/api/sweeps/nope")
    assert caught.value.code == 404
    assert "no sweep with id or name 'nope'" in json.loads(caught.value.response.body)["message"]


class ReadOnly(Authorizer):
    def is_authorized(self, handler, user, action, resource) -> bool:
        return resource != "px" or action == "read"


async def test_stopping_needs_write(jp_fetch, jp_serverapp, px_home, tmp_path):
    script = tmp_path / "slow.py"
    script.write_text("import time\ntime.sleep(60)\n")
    sweep = jupyter_px.sweep(script, QUICK, name="guarded")
    jp_serverapp.web_app.settings["authorizer"] = ReadOnly(parent=jp_serverapp)
    assert (await jp_fetch("px/api/sweeps/guarded")).code == 200
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch("px/api/sweeps/guarded", method="DELETE")
    assert caught.value.code == 403
    assert not sweep.status().state.finished
    sweep.stop()


TWO = """
hptuning:
  concurrency: 3
  seed: 4
  random_search: {n_experiments: 6}
  metrics:
    - {name: loss, optimization: minimize}
    - {name: throughput, optimization: maximize}
  matrix:
    x: {uniform: [0, 1]}
    y: {uniform: [0, 1]}
"""


async def test_a_two_objective_sweeps_pareto_front_and_its_view_model(jp_fetch, px_home):
    sweep = jupyter_px.sweep(JOBS / "two_objectives.py", TWO, name="two")
    assert sweep.wait(timeout=300).state.value == "Succeeded"
    detail = await get_json(jp_fetch, "px/api/sweeps/two")
    assert detail["objectives"] == [
        {"name": "loss", "direction": "minimize"},
        {"name": "throughput", "direction": "maximize"},
    ]
    values = {t["number"]: (t["values"]["loss"], t["values"]["throughput"]) for t in detail["trials"]}
    front = {n for n, p in values.items() if not any(q[0] <= p[0] and q[1] >= p[1] and q != p for q in values.values())}
    assert set(detail["pareto"]) == front and detail["best"] is None

    view = await get_json(jp_fetch, "px/api/sweeps/two/view")
    assert view["sweep_id"] == sweep.sweep_id and view["complete"] == 6
    assert set(view["pareto"]["front"]) == front
    assert {p["trial"]: tuple(p["values"]) for p in view["pareto"]["points"]} == values
    assert [h["objective"] for h in view["history"]] == ["loss", "throughput"]
    assert [p["value"] for p in view["history"][0]["points"]] == [values[n][0] for n in sorted(values)]
    assert {axis["name"] for axis in view["parallel"]["axes"]} == {"x", "y", "loss", "throughput"}
    assert sorted(view["importance"][0]["params"]) == ["x", "y"]
    assert (view["contour"]["x_param"], view["contour"]["y_param"]) in (("x", "y"), ("y", "x"))
    figures = view.pop("figures")  # each view drawn, the extension's to theme
    assert view == sweep.view_model().model_dump(mode="json")  # the notebook's Sweep gets the same
    assert figures == sweep_figures(sweep.view_model()).model_dump(mode="json")  # and its monitor draws the same
    others, front_line = figures["pareto"]["data"]
    assert sorted(front_line["customdata"]) == sorted(front) and len(figures["history"]) == 2

    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch("px/api/sweeps/nope/view")
    assert caught.value.code == 404


async def test_posting_a_topology_with_a_sweep_section_to_runs_starts_the_sweep(jp_fetch, jp_root_dir, px_home):
    """The sidebar submits every topology to `POST runs`: one with a sweep section starts its
    sweep (each trial with its values), never one run without them, and says so (its Location)."""
    (jp_root_dir / "quick.py").write_text((JOBS / "sweep_quick.py").read_text())
    response = await jp_fetch(
        "px/api/runs", method="POST", body=json.dumps({"topology": QUICK, "script": "quick.py", "name": "posted"})
    )
    started = json.loads(response.body)
    assert response.code == 201 and response.headers["Location"].endswith(f"/px/api/sweeps/{started['sweep_id']}")
    assert started["name"] == "posted" and started["n_trials"] == 2 and "run_id" not in started
    sweep = jupyter_px.Sweep(started["sweep_id"])
    assert sweep.wait(timeout=300).state.value == "Succeeded"
    detail = await get_json(jp_fetch, f"px/api/sweeps/{started['sweep_id']}")
    assert sorted(t["params"]["x"] for t in detail["trials"]) == [1, 3]
    assert sorted(t["value"] for t in detail["trials"]) == pytest.approx([1 / 3, 4 + 1 / 3])  # (x - 3)² + 1/3
