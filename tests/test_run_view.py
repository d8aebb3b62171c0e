"""The run's view-model (`GET px/api/runs/<ref>/view`): what every front-end shows of a run.

Real runs on the local backend, read through the real jupyter_server: each rank's step rate and
the straggler line from what tracking records (a worker that really is slower), and what changed
since the previous run of the same cell (code, params, metrics); the replicas bar's phases.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from jupyter_px.presentation.rates import rank_paces, straggler_line

pytest_plugins = ["pytest_jupyter.jupyter_server"]

TWO_WORKERS = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 2}}}


@pytest.fixture
def jp_server_config(px_home):
    return {"ServerApp": {"jpserver_extensions": {"jupyter_px": True}}}


async def view_of(jp_fetch, run_id: str) -> dict:
    response = await jp_fetch("px", "api", "runs", run_id, "view")
    return json.loads(response.body)


def test_lockstep_ranks_name_the_one_that_arrives_late():
    """Ranks held together by a collective share one rate; the one that reaches every step later
    than the others is named, with what waiting for it costs them."""
    steps = list(range(20))
    clocks = {
        "master-0": (steps, [s * 1.0 for s in steps]),
        "worker-0": (steps, [s * 1.0 + 0.05 for s in steps]),
        "worker-1": (steps, [s * 1.0 + 0.6 for s in steps]),
    }
    paces = rank_paces(clocks)
    line = straggler_line(paces, {"worker-1": "worker-1"})
    assert line is not None and line.startswith("worker-1 reaches each step 0.55s after the median rank")
    assert "the other ranks spend" in line
    assert [round(p.steps_per_s or 0, 2) for p in paces] == [1.0, 1.0, 1.0]
    # No rank later than another: nothing to say.
    even = {key: (steps, [float(s) for s in steps]) for key in clocks}
    assert straggler_line(rank_paces(even)) is None


async def test_a_slower_worker_is_named_from_its_logged_steps(jp_fetch, px_home, tmp_path):
    """A real job: three replicas log 25 steps each, worker-1 sleeping three times longer per
    step; the view gives each rank's step rate and names worker-1 as the straggler."""
    from jupyter_px import submit

    script = tmp_path / "pace.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, time
            from jupyter_px import tracking
            pause = 0.12 if os.environ["PX_TASK_TYPE"] == "worker" and os.environ["PX_TASK_INDEX"] == "1" else 0.04
            for step in range(25):
                time.sleep(pause)
                tracking.log_metrics(step=step, total_steps=25, loss=1.0 / (step + 1))
            """
        )
    )
    run = submit(str(script), TWO_WORKERS, name="pace")
    assert run.wait(timeout=120).state.value == "Succeeded"
    view = await view_of(jp_fetch, run.run_id)
    rates = {rate["replica"]: rate["steps_per_s"] for rate in view["rates"]}
    assert set(rates) == {"master-0", "worker-0", "worker-1"}
    assert rates["worker-1"] < rates["master-0"] / 2
    assert view["straggler"] is not None and view["straggler"].startswith("worker-1 is ")
    assert "slower than the median rank" in view["straggler"]
    assert view["progress"] == "step 25/25 (slowest: master-0)" or view["progress"].startswith("step 25/25")
    assert [row["step"] for row in view["replicas"]] == ["25/25"] * 3
    assert view["phases"] == [{"phase": "Succeeded", "state": "Succeeded", "count": 3}]
    assert view["counts"] == "3 succeeded of 3"


async def test_what_changed_since_the_previous_run_of_the_cell(jp_fetch, px_home):
    """Two runs of the same cell (its id recorded as the code's origin), the second with another
    learning rate: its view shows the code diff, the param that changed and each metric against
    the previous run's final value; a run of another cell has no previous run."""
    from jupyter_px import submit
    from jupyter_px.service import SourceText

    def cell(lr: float) -> str:
        return textwrap.dedent(
            f"""
            from jupyter_px import tracking
            lr = {lr}
            tracking.log_params(lr=lr)
            for step in range(5):
                tracking.log_metrics(step=step, loss=lr * (5 - step), acc=0.5 + lr)
            """
        )

    one = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 0}}}
    first = submit(SourceText(cell(0.4), origin="cell:abc-1"), one, name="lr")
    assert first.wait(timeout=120).state.value == "Succeeded"
    second = submit(SourceText(cell(0.1), origin="cell:abc-1"), one, name="lr")
    other = submit(SourceText(cell(0.1), origin="cell:zzz-9"), one, name="other")
    assert second.wait(timeout=120).state.value == "Succeeded"
    assert other.wait(timeout=120).state.value == "Succeeded"

    changes = (await view_of(jp_fetch, second.run_id))["changes"]
    assert changes["previous_run"] == first.run_id
    assert "-lr = 0.4" in changes["code_diff"] and "+lr = 0.1" in changes["code_diff"]
    assert {"name": "lr", "before": "0.4", "after": "0.1"} in changes["params"]
    metrics = {m["name"]: m for m in changes["metrics"]}
    assert metrics["loss"]["before"] == pytest.approx(0.4) and metrics["loss"]["after"] == pytest.approx(0.1)
    assert metrics["loss"]["better"] is True  # a lower loss
    assert metrics["acc"]["better"] is False  # a lower accuracy
    assert (await view_of(jp_fetch, other.run_id))["changes"] is None
    assert (await view_of(jp_fetch, first.run_id))["changes"] is None


async def test_starting_replicas_are_waiting_not_done(jp_fetch, synthetic_run):
    """Running replicas that printed nothing yet are `starting`: the replicas bar's segments take
    the waiting color's state (Pending), not the running one that reads as progress."""
    synthetic_run("boot", TWO_WORKERS, state="Running", log_lines=0)
    view = await view_of(jp_fetch, "boot")
    assert view["counts"] == "3 starting of 3"
    assert view["phases"] == [{"phase": "starting", "state": "Pending", "count": 3}]
    assert view["failure"] is None and view["changes"] is None


async def test_a_failed_run_says_its_exception_line(jp_fetch, px_home, tmp_path):
    from jupyter_px import submit

    script = tmp_path / "fail.py"
    script.write_text("import os\nif os.environ['PX_TASK_TYPE'] == 'master':\n    raise ValueError('bad lr: -1')\n")
    run = submit(str(script), TWO_WORKERS, name="fails")
    run.wait(timeout=120)
    view = await view_of(jp_fetch, run.run_id)
    assert view["state"] == "Failed"
    assert view["failure"]["line"] == "ValueError: bad lr: -1"
    assert view["failure"]["replica"] == "master-0"
    assert view["failure"]["cell_id"] is None  # where a "Go to cell" button gets its cell


async def test_a_failed_cell_runs_view_says_which_cell_and_line_go_to_cell_opens(jp_fetch, px_home, tmp_path):
    """The failure record has the notebook cell's id and the line in it: the run's view carries
    both, or "Go to cell" is never drawn."""
    import nbformat

    from jupyter_px import submit

    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("import os\nvalue = 3"),
            nbformat.v4.new_code_cell(
                "%%px_distributed\nx = 1\nif os.environ['PX_TASK_TYPE'] == 'master':\n    value = value / 0"
            ),
        ]
    )
    path = tmp_path / "train.ipynb"
    nbformat.write(notebook, path)
    run = submit(path, TWO_WORKERS, name="cell-fails")
    run.wait(timeout=120)
    view = await view_of(jp_fetch, run.run_id)
    assert view["state"] == "Failed" and view["failure"]["line"] == "ZeroDivisionError: division by zero"
    assert (view["failure"]["cell_id"], view["failure"]["cell_line"]) == (notebook.cells[1].id, 4)
    # how its replicas started, and why cold, in the view and in the runs list's row
    assert view["launch"] == run.status().launch and view["launch"].startswith(("warm", "cold"))
    rows = json.loads((await jp_fetch("px", "api", "runs")).body)["runs"]
    assert [row["launch"] for row in rows if row["run_id"] == run.run_id] == [view["launch"]]
