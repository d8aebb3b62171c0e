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

import nbformat
import pytest
from local_support import RUN_TIMEOUT_S, describe, wait
from waiting import wait_for

from jupyter_px.cli import main as cli_main
from jupyter_px.diagnostics import snapshots

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


def _hung_run(tmp_path):
    from jupyter_px.api import submit

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
    return submit(path, {"framework": "pytorch", "environment": {"replicas": {"n_workers": 2}}})


def _groups(snapshot) -> dict[str, list[str]]:
    return {group["summary"]: group["replicas"] for group in snapshot["groups"]}


@pytest.mark.jobs
def test_a_rank_asleep_before_all_reduce_is_stalled_and_its_stack_stands_apart(px_home, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PX_STALL_AFTER_S", "5")
    run = _hung_run(tmp_path)
    try:
        status = wait_for(
            lambda: (s := run.status()).replicas and all(r.stalled_since is not None for r in s.replicas) and s,
            "every replica marked Stalled",
            timeout=RUN_TIMEOUT_S,
            poll=0.5,
        )
        assert status.state.value == "Running", describe(run)  # a mark, not a state
        for replica in status.replicas:
            assert replica.state.value == "Running" and replica.stall_after_s == pytest.approx(5.0), replica

        # taken once by the supervisor when the stall began, kept in the run
        auto = wait_for(lambda: snapshots.latest(run.paths.root), "the stacks taken on the stall", timeout=60)
        assert auto["why"].startswith("stalled: "), auto["why"]
        assert _groups(auto) == {IN_ALL_REDUCE: ["master-0", "worker-0"], ASLEEP: ["worker-1"]}, auto["text"]
        assert len(snapshots.kept(run.paths.root)) == 1  # once per stall, not once per replica

        # on request, from the command line
        assert cli_main(["stacks", run.run_id]) == 0
        out = capsys.readouterr().out
        assert "(on request)" in out and f"2 replicas (master-0, worker-0): {IN_ALL_REDUCE}" in out, out
        assert f"worker-1: {ASLEEP}" in out, out
        taken = snapshots.latest(run.paths.root)
        worker = next(r for r in taken["replicas"] if r["key"] == "worker-1")
        main_thread = next(t for t in worker["threads"] if t["main"])
        assert main_thread["frames"][0]["cell"] == "cell [4]" and main_thread["frames"][0]["cell_line"] == 11
        assert len(worker["threads"]) >= 2  # tracking's delivery thread too: every thread is shown
    finally:
        run.stop()
    wait(run)

    # after the run: the kept stacks are still there to read
    assert cli_main(["stacks", run.run_id, "--all"]) == 0
    out = capsys.readouterr().out
    assert "(on request)" in out and f"worker-1: {ASLEEP}" in out and "thread" in out, out


def test_stacks_of_a_run_that_never_had_any_say_so_in_one_line(px_home, capsys):
    from conftest import make_synthetic_run

    make_synthetic_run(px_home, "quiet-run", {"framework": "pytorch"}, state="Succeeded")
    assert cli_main(["stacks", "quiet-run"]) == 2
    assert "no stacks were taken of run quiet-run while it ran" in capsys.readouterr().err
