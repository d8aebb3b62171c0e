"""A real hang seen from inside: every rank's stack, and the Stalled mark (issue: a job that stops
making progress).

A real 3-replica PyTorch job on gloo, submitted from a notebook's cells: every rank logs steps
and all-reduces, then rank 2 (worker-1) sleeps before its next all_reduce while the other two wait
in theirs, in native code. The supervisor must mark the replicas Stalled (the floor lowered
through PX_STALL_AFTER_S) and take the stacks once by itself; `jupyter px stacks` must show
rank 2 apart from the two in all_reduce, each at its notebook cell and line; and the stacks must
still be readable after the run has been stopped.
"""

from __future__ import annotations

import asyncio
import json
import time

import nbformat
import pytest
from local_support import RUN_TIMEOUT_S, describe, wait
from waiting import wait_for

from jupyter_px.cli import main as cli_main
from jupyter_px.diagnostics import snapshots

pytest_plugins = ["pytest_jupyter.jupyter_server"]

#: Cell [4] as the notebook shows it; line 1 is the magic, so `dist.all_reduce` is line 5 and
#: rank 2's sleep line 11.
HANG = """%%px_distributed
dist.init_process_group("gloo")
rank = dist.get_rank()
def step(value):
    dist.all_reduce(value)
    return value
for i in range(30):
    tracking.log_metrics(step=i, loss=float(step(torch.ones(1))[0]))
    time.sleep(0.05)
if rank == 2:
    time.sleep(900)
step(torch.ones(1))
"""
IN_ALL_REDUCE = "all_reduce <- step, cell [4] line 5"
ASLEEP = "<module>, cell [4] line 11: time.sleep(900)"
KEYS = ("master-0", "worker-0", "worker-1")


def hang_notebook(tmp_path):
    """The notebook whose cell [4] hangs (`HANG`); its path."""
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "import time\nimport torch\nimport torch.distributed as dist\nfrom jupyter_px import tracking",
                execution_count=1,
            ),
            nbformat.v4.new_code_cell(HANG, execution_count=4),
        ]
    )
    path = tmp_path / "hang.ipynb"
    nbformat.write(notebook, path)
    return path


def assert_worker_1_named(run, status) -> None:
    """The hang with `collectiveTimeout: 5` ended naming worker-1, asleep, as the rank its peers
    waited for (not master-0 or worker-0, which timed out waiting), from stacks kept in the run."""
    assert status.state.value == "Failed" and status.reason == "CollectiveTimeout", status
    assert status.message.startswith("worker-1 never joined the collective its peers waited in ("), status.message
    # master-0's or worker-0's, first to fail, in the all_reduce after the 30 steps' (the flight recorder's)
    assert "-0 timed out after 5 s in all_reduce #31); " in status.message, status.message
    assert status.message.endswith(f"; worker-1 was at {ASLEEP}"), status.message
    by_key = {r.key: r for r in status.replicas}
    assert by_key["worker-1"].state.value == "Failed" and by_key["worker-1"].reason == "CollectiveTimeout", by_key
    for key in ("master-0", "worker-0"):  # they waited: their own timeout, or stopped because of worker-1
        said = by_key[key].message or ""
        assert "Timed out waiting 5000ms" in said or said == "stopped because worker-1 never joined a collective", said
    assert snapshots.latest(run.paths.root)["why"].endswith("'s collective timed out")


def _hung_run(tmp_path):
    from jupyter_px.api import submit

    return submit(hang_notebook(tmp_path), {"framework": "pytorch", "environment": {"replicas": {"n_workers": 2}}})


def _groups(snapshot) -> dict[str, list[str]]:
    return {group["summary"]: group["replicas"] for group in snapshot["groups"]}


@pytest.fixture
def jp_server_config(px_home):
    """The server with our extension; `px_home` first, so the extension's store is the test's."""
    return {"ServerApp": {"jpserver_extensions": {"jupyter_px": True}}}


async def _stacks_route(jp_fetch, run_id: str, method: str) -> dict:
    response = await jp_fetch(
        "px", "api", "runs", run_id, "stacks", method=method, **({"body": ""} if method == "POST" else {})
    )
    assert response.code == 200
    return json.loads(response.body)


def _cli(capsys, *args: str) -> str:
    assert cli_main(["stacks", *args]) == 0
    return capsys.readouterr().out


@pytest.mark.jobs
async def test_a_rank_asleep_before_all_reduce_is_stalled_and_its_stack_stands_apart(
    px_home, tmp_path, monkeypatch, capsys, jp_fetch, launch
):
    monkeypatch.setenv("PX_STALL_AFTER_S", "5")
    run = await asyncio.to_thread(_hung_run, tmp_path)
    try:
        status = await asyncio.to_thread(
            wait_for,
            lambda: (s := run.status()).replicas and all(r.stalled_since is not None for r in s.replicas) and s,
            "every replica marked Stalled",
            timeout=RUN_TIMEOUT_S,
            poll=0.5,
        )
        assert status.state.value == "Running", describe(run)  # a mark, not a state
        for replica in status.replicas:
            assert replica.state.value == "Running" and replica.stall_after_s == pytest.approx(5.0), replica
        code, listed = response_json(await jp_fetch("px", "api", "runs", run.run_id))
        assert all(r["stalled_since"] for r in listed["replicas"]), listed
        code, view = response_json(await jp_fetch("px", "api", "runs", run.run_id, "view"))
        assert {r["key"]: r["phase"] for r in view["replicas"]} == dict.fromkeys(KEYS, "stalled"), view["replicas"]
        for row in view["replicas"]:  # the run view's Stalled badge says since when, and the limit
            assert row["stall_after_s"] == pytest.approx(5.0) and row["stalled_since"] <= time.time(), row
        assert view["stalled"].startswith("Stalled: master-0 (no step for "), view["stalled"]
        assert view["stalled"].endswith(f"`jupyter px stacks {run.run_id}` shows where each rank is"), view["stalled"]
        assert await asyncio.to_thread(cli_main, ["status", run.run_id]) == 0
        said = capsys.readouterr().out
        assert said.count("Stalled: no step for") == 3 and "(limit 5 s)" in said, said

        # taken once by the supervisor when the stall began, kept in the run
        auto = await asyncio.to_thread(
            wait_for, lambda: snapshots.latest(run.paths.root), "the stacks taken on the stall", timeout=60
        )
        assert auto["why"].startswith("stalled: "), auto["why"]
        assert _groups(auto) == {IN_ALL_REDUCE: ["master-0", "worker-0"], ASLEEP: ["worker-1"]}, auto["text"]
        assert len(snapshots.kept(run.paths.root)) == 1  # once per stall, not once per replica

        # on request, through the REST API and from the command line
        taken = await _stacks_route(jp_fetch, run.run_id, "POST")
        assert taken["why"] == "on request" and _groups(taken) == _groups(auto), taken["text"]
        worker = next(r for r in taken["replicas"] if r["key"] == "worker-1")
        main_thread = next(t for t in worker["threads"] if t["main"])
        assert (main_thread["frames"][0]["cell"], main_thread["frames"][0]["cell_line"]) == ("cell [4]", 11)
        assert len(worker["threads"]) >= 2  # tracking's delivery thread too: every thread is shown
        out = await asyncio.to_thread(_cli, capsys, run.run_id)
        assert "(on request)" in out and f"2 replicas (master-0, worker-0): {IN_ALL_REDUCE}" in out, out
        assert f"worker-1: {ASLEEP}" in out, out
    finally:
        await asyncio.to_thread(run.stop)
    await asyncio.to_thread(wait, run)

    # after the run: the kept stacks are still there to read
    kept = await _stacks_route(jp_fetch, run.run_id, "GET")
    assert kept["why"] == "on request" and _groups(kept) == _groups(auto), kept
    out = await asyncio.to_thread(_cli, capsys, run.run_id, "--all")
    assert f"worker-1: {ASLEEP}" in out and "thread" in out and "cell [4], line 11, in <module>" in out, out


def response_json(response) -> tuple[int, dict]:
    return response.code, json.loads(response.body)


def test_stacks_of_a_run_that_never_had_any_say_so_in_one_line(px_home, capsys):
    from conftest import make_synthetic_run

    make_synthetic_run(px_home, "quiet-run", {"framework": "pytorch"}, state="Succeeded")
    assert cli_main(["stacks", "quiet-run"]) == 2
    assert "no stacks were taken of run quiet-run while it ran" in capsys.readouterr().err


@pytest.mark.jobs
@pytest.mark.cold_only  # processes_per_replica > 1: a warm round starts it cold too (test_warm checks the reason)
def test_a_replica_of_several_processes_answers_for_each_of_them(px_home, tmp_path, launch):
    """With `processes_per_replica: 2` the replica's first process only starts its ranks: it passes
    the signal on, and each rank's stack is shown under its own name."""
    from jupyter_px.api import submit

    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("%%px_distributed\nimport time\ntime.sleep(600)", execution_count=7)]
    )
    path = tmp_path / "ranks.ipynb"
    nbformat.write(notebook, path)
    topology = {"framework": "pytorch", "environment": {"processes_per_replica": 2, "replicas": {"n_workers": 1}}}
    run = submit(path, topology)
    everyone = ["master-0", "master-0.rank1", "worker-0", "worker-0.rank1"]
    asleep = "<module>, cell [7] line 3: time.sleep(600)"

    def all_asleep():
        snapshot = run.stacks()
        return snapshot if _groups(snapshot) == {asleep: everyone} else None

    try:
        taken = wait_for(
            all_asleep,
            "every rank asleep in its stacks",
            timeout=RUN_TIMEOUT_S,
            poll=1,
        )
        assert taken["text"] == f"4 replicas ({', '.join(everyone)}): {asleep}"
    finally:
        run.stop()
    wait(run)
