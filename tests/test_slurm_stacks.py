"""Every rank's stack on a real Slurm cluster (tests/slurm_cluster): the same hang as the local
test (tests/test_stacks.py), each replica on its own node; `jupyter px stacks` reaches them through
`scancel --signal` and reads their dumps from the run directory the nodes share; the follower
marks the hung replicas Stalled and takes their stacks itself when the stall begins."""

from __future__ import annotations

import hang_kinds
import pytest
from slurm_support import DEADLINE_S, slurm_cluster_fixture, topology_of, use_slurm_fixture, wait_for  # noqa: F401
from test_hang_kinds import TOPOLOGY as HANG_TOPOLOGY
from test_stacks import ASLEEP, IN_ALL_REDUCE, assert_worker_1_named, hang_notebook

from jupyter_px.cli import main as cli_main
from jupyter_px.diagnostics import snapshots

pytestmark = pytest.mark.slurm


TOPOLOGY = topology_of(cpu=3, memory=900)  # one replica per node


def test_the_stacks_of_a_hung_slurm_job_show_the_sleeping_rank_apart(use_slurm, px_home, tmp_path, capsys):
    from jupyter_px.api import submit

    run = submit(hang_notebook(tmp_path), TOPOLOGY)
    try:
        # every replica running and past its steps (each logged its last one)
        wait_for(
            lambda: all(r.state.value == "Running" for r in run.status().replicas) and _all_logged(run),
            "every replica past its 30 steps",
            timeout=DEADLINE_S,
            poll=0.5,
        )
        taken = run.stacks()
        groups = {g["summary"]: g["replicas"] for g in taken["groups"]}
        assert groups == {IN_ALL_REDUCE: ["master-0", "worker-0"], ASLEEP: ["worker-1"]}, taken["text"]
        assert cli_main(["stacks", run.run_id, "--last"]) == 0
        assert f"worker-1: {ASLEEP}" in capsys.readouterr().out
    finally:
        run.stop()
    assert snapshots.latest(run.paths.root)["groups"] == taken["groups"]  # kept in the run's own directory


def _all_logged(run) -> bool:
    """Whether every replica's metrics file holds its last step (29)."""
    for role, index in run.replicas():
        path = run.paths.metrics(role, index)
        try:
            if '"step":29,' not in path.read_text():
                return False
        except OSError:
            return False
    return True


def test_the_follower_marks_a_hung_slurm_job_stalled_and_takes_its_stacks(use_slurm, px_home, tmp_path, monkeypatch):
    """Each replica logged its 30 steps and then waits (two in all_reduce, one asleep): past the
    floor (PX_STALL_AFTER_S, which the follower reads), every one is marked Stalled while still
    Running, and the follower has taken the stacks once, with the stall as the reason."""
    from jupyter_px.api import submit

    monkeypatch.setenv("PX_STALL_AFTER_S", "4")
    run = submit(hang_notebook(tmp_path), TOPOLOGY)
    try:
        status = wait_for(
            lambda: (s := run.status()).replicas and all(r.stalled_since is not None for r in s.replicas) and s,
            "every replica marked Stalled",
            timeout=DEADLINE_S,
            poll=0.5,
        )
        assert status.state.value == "Running", status  # a mark, not a state
        for replica in status.replicas:
            assert replica.state.value == "Running" and replica.stall_after_s == pytest.approx(4.0), replica
        auto = wait_for(lambda: snapshots.latest(run.paths.root), "the stacks taken on the stall", timeout=60)
        assert auto["why"].startswith("stalled: "), auto["why"]
        groups = {g["summary"]: g["replicas"] for g in auto["groups"]}
        assert groups == {IN_ALL_REDUCE: ["master-0", "worker-0"], ASLEEP: ["worker-1"]}, auto["text"]
    finally:
        run.stop()
    assert len(snapshots.kept(run.paths.root)) == 1  # once per stall


HOLD = """\
import os, time
from jupyter_px import tracking

tracking.log_metrics(step=0, loss=1.0)
held = bytearray(200 * 2**20) if os.environ["PX_TASK_TYPE"] == "worker" and os.environ["PX_TASK_INDEX"] == "1" else b""
time.sleep(8)
"""


def test_each_slurm_replicas_cpu_and_memory_are_sampled_beside_its_limit(use_slurm, px_home):
    """The node launcher samples each replica's process tree as the local supervisor does: every
    replica has its `system/` series, the one holding 200 MiB shows it, and the run view puts
    each replica's usage beside the 900 MiB its resources declare."""
    from jupyter_px.presentation.run_view import RunViewSource
    from jupyter_px.service import RunService, SourceText, Submission

    service = RunService()
    run_id = service.submit(Submission(SourceText(HOLD), TOPOLOGY))
    status = service.wait(run_id, timeout=DEADLINE_S)
    assert status.state.value == "Succeeded", status
    reader = service.metrics_reader(run_id)
    rss = {key: reader.series(key, "system/rss_mib").values for key in ("master-0", "worker-0", "worker-1")}
    assert all(len(values) >= 2 for values in rss.values()), rss  # every 2 s over 8 s
    assert max(rss["worker-1"]) > max(rss["worker-0"]) + 150, rss
    assert list(reader.series("worker-1", "loss").values) == [1.0]  # the code's own series, untouched
    rows = {row.key: row.memory_limit_mib for row in RunViewSource(service, run_id).view().replicas}
    assert rows == dict.fromkeys(("master-0", "worker-0", "worker-1"), 900), rows


def test_a_collective_timeout_on_slurm_names_the_rank_that_never_joined(use_slurm, px_home, tmp_path):
    """The same hang with `collectiveTimeout: 5`: master-0 and worker-0 give up waiting in their
    all_reduce after 5 s (each replica's environment carried the timeout to its runner), and the
    follower reads the stacks of the replica still running to name it as the cause."""
    from jupyter_px.api import submit

    run = submit(hang_notebook(tmp_path), {**TOPOLOGY, "termination": {"collectiveTimeout": 5}})
    status = run.wait(timeout=DEADLINE_S)
    assert_worker_1_named(run, status)


def test_a_deadlocked_dataloader_and_a_skipped_barrier_are_seen_and_named_on_slurm(
    use_slurm, px_home, tmp_path, monkeypatch
):
    """The other two hangs (tests/hang_kinds.py), side by side on the cluster's nodes: the
    follower's stall stacks show worker-1 apart, and the collective timeout names worker-1."""
    from jupyter_px.api import submit

    monkeypatch.setenv("PX_STALL_AFTER_S", "4")
    topology = {**topology_of(memory=900), "termination": HANG_TOPOLOGY["termination"]}
    runs = {hang: submit(hang_kinds.notebook(tmp_path, hang), topology) for hang in hang_kinds.HANGS}
    try:
        for hang, run in runs.items():
            hang_kinds.stacks_of_the_hang(run, hang, timeout=DEADLINE_S)
        for hang, run in runs.items():
            hang_kinds.assert_named(run.wait(timeout=DEADLINE_S), hang)
    finally:
        for run in runs.values():
            run.stop()
