"""The sidebar's run housekeeping over REST: deleting a finished run's directory (its Delete and
"Clear finished") and one TensorBoard for several runs (its multi-select), against the real
jupyter_server (pytest-jupyter) and, for TensorBoard, a real TensorBoard process."""

from __future__ import annotations

import pytest
from conftest import make_synthetic_run
from test_server_api import TOPOLOGY, error_of, fetch_json, post

from jupyter_px import tensorboard
from jupyter_px.runstore import RunStore

pytest_plugins = ["pytest_jupyter.jupyter_server"]


@pytest.fixture
def jp_server_config(px_home):
    return {"ServerApp": {"jpserver_extensions": {"jupyter_px": True}}}


@pytest.mark.parametrize("state", ["Succeeded", "Failed", "Stopped", "Lost"])
async def test_a_finished_runs_directory_is_removed(jp_fetch, px_home, state):
    make_synthetic_run(px_home, "done-1", TOPOLOGY, state=state)
    make_synthetic_run(px_home, "other-1", TOPOLOGY, state="Succeeded")
    code, body = await fetch_json(jp_fetch, "px/api/runs/done-1/directory", method="DELETE")
    assert code == 200 and body == {
        "run_id": "done-1",
        "deleted": True,
        "removed": [],
    }  # a local run leaves nothing elsewhere
    store = RunStore(px_home)
    assert not (px_home / "runs" / "done-1").exists() and store.run_ids() == ["other-1"]
    _, page = await fetch_json(jp_fetch, "px/api/runs")
    assert [run["run_id"] for run in page["runs"]] == ["other-1"]
    # a second delete finds nothing
    code, message = await error_of(jp_fetch, "px/api/runs/done-1/directory", method="DELETE")
    assert code == 404 and "done-1" in message


@pytest.mark.parametrize("state", ["Running", "Pending"])
async def test_a_run_that_has_not_finished_is_refused_with_409(jp_fetch, px_home, state):
    make_synthetic_run(px_home, "busy-1", TOPOLOGY, state=state)
    code, message = await error_of(jp_fetch, "px/api/runs/busy-1/directory", method="DELETE")
    assert code == 409
    assert message == f"run busy-1 is {state}: stop it before deleting it"
    assert RunStore(px_home).status("busy-1").state.value == state


async def test_only_an_exact_run_id_is_deleted(jp_fetch, px_home):
    """A name or `last` resolves elsewhere, never here: it could mean another run by then."""
    make_synthetic_run(px_home, "named-1", TOPOLOGY, state="Succeeded")
    for ref, expected in [("last", 404), ("UPPER", 400), ("..", 400), ("%2E%2E", 400), ("-x", 400)]:
        code, _ = await error_of(jp_fetch, f"px/api/runs/{ref}/directory", method="DELETE")
        assert code == expected, ref
    assert RunStore(px_home).run_ids() == ["named-1"]


async def test_tensorboard_refuses_bad_or_unknown_other_runs(jp_fetch, px_home):
    make_synthetic_run(px_home, "real-1", TOPOLOGY, state="Succeeded")
    code, message = await error_of(jp_fetch, "px/api/runs/real-1/tensorboard", **post({"also": ["../x"]}))
    assert code == 400 and message.startswith("also.0: '../x' is not a run id")
    code, message = await error_of(jp_fetch, "px/api/runs/real-1/tensorboard", **post({"also": "real-1"}))
    assert code == 400 and message.startswith("also:")
    code, message = await error_of(jp_fetch, "px/api/runs/real-1/tensorboard", **post({"also": ["nope-2"]}))
    assert code == 404 and message == "also: no run 'nope-2'"


async def test_one_tensorboard_serves_several_runs(jp_fetch, px_home):
    make_synthetic_run(px_home, "tb-a", TOPOLOGY, state="Succeeded")
    make_synthetic_run(px_home, "tb-b", TOPOLOGY, state="Succeeded")
    code, started = await fetch_json(
        jp_fetch, "px/api/runs/tb-a/tensorboard", request_timeout=120, **post({"also": ["tb-b", "tb-a"]})
    )  # (a TensorBoard started on a loaded machine takes longer than jp_fetch's own 20 s)
    assert code == 200 and started["status"] == "launched"
    try:
        (server,) = tensorboard.list_servers()
        store = RunStore(px_home)
        assert server.key == started["key"]
        assert server.logdirs == {
            "tb-a": str(store.paths("tb-a").tensorboard_dir),
            "tb-b": str(store.paths("tb-b").tensorboard_dir),
        }
        # the same set from the other run is the same server
        code, again = await fetch_json(
            jp_fetch, "px/api/runs/tb-b/tensorboard", request_timeout=120, **post({"also": ["tb-a"]})
        )
        assert again["status"] == "reused" and again["port"] == started["port"]
    finally:
        tensorboard.stop(started["key"])
