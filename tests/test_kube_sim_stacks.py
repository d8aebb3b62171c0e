"""Every rank's stack on the simulated cluster: the same hang as the local test
(tests/test_stacks.py), each replica in its own pod. `jupyter px stacks` asks inside each running
pod (an exec of the shipped `stack_request.py`, as `kubectl exec` would: the pods' run directory is
the read-only ConfigMap, so their dumps stay on the pod's volume), and names each frame by its
notebook cell; the snapshot is kept in the run. The follower marks the hung replicas Stalled and
takes their stacks itself, once, when the stall begins."""

from __future__ import annotations

import json

import hang_kinds
import pytest
from kube_sim_support import backend_cluster
from test_hang_kinds import TOPOLOGY as HANG_TOPOLOGY
from test_stacks import ASLEEP, IN_ALL_REDUCE, assert_worker_1_named, hang_notebook
from waiting import wait_for

from jupyter_px.cli import main as cli_main
from jupyter_px.diagnostics import snapshots

pytestmark = pytest.mark.kube

EXPECTED = {IN_ALL_REDUCE: ["master-0", "worker-0"], ASLEEP: ["worker-1"]}


@pytest.mark.parametrize("backend", ["native", "kubeflow"])
def test_the_stacks_of_a_hung_kubernetes_run_show_the_sleeping_rank_apart(
    backend, tmp_path, monkeypatch, px_home, capsys
):
    from jupyter_px.api import submit

    monkeypatch.setenv("PX_STALL_AFTER_S", "5")  # the follower's floor: stalled 5 s after the last step
    with backend_cluster(tmp_path, monkeypatch, px_home):
        topology = {"framework": "pytorch", "backend": backend, "environment": {"replicas": {"n_workers": 2}}}
        run = submit(hang_notebook(tmp_path), topology)
        try:
            # asked again until every rank is past its 30 steps: two in all_reduce, one asleep
            seen: list[dict] = []

            def hung():
                seen.append(run.stacks())
                return seen[-1] if _groups(seen[-1]) == EXPECTED else None

            try:
                taken = wait_for(hung, "two ranks in all_reduce and one asleep", timeout=180, poll=1)
            except AssertionError as error:
                raise AssertionError(f"{error}; the last stacks: {seen[-1] if seen else None}") from None
            worker = next(r for r in taken["replicas"] if r["key"] == "worker-1")
            frame = next(t for t in worker["threads"] if t["main"])["frames"][0]
            assert (frame["cell"], frame["cell_line"], frame["code"]) == ("cell [4]", 11, "time.sleep(900)"), frame
            assert frame["file"].startswith(str(run.paths.root)), frame  # the pod's mount read as the run's code
            assert cli_main(["stacks", run.run_id, "--last"]) == 0
            assert f"worker-1: {ASLEEP}" in capsys.readouterr().out

            # the follower's own snapshot, taken once when the stall began, and the Stalled marks
            auto = wait_for(
                lambda: [p for p in snapshots.kept(run.paths.root) if _why(p).startswith("stalled: ")],
                "the stacks the follower took on the stall",
                timeout=60,
            )
            assert len(auto) == 1, auto
            assert _groups(json.loads(auto[0].read_text())) == EXPECTED, auto[0].read_text()
            status = wait_for(lambda: _all_stalled(run.status()), "every replica marked Stalled", timeout=60)
            assert status.state.value == "Running", status  # a mark, not a state
        finally:
            run.stop()
        assert snapshots.latest(run.paths.root)["groups"] == taken["groups"]  # kept in the run's directory


def _all_stalled(status):
    return status if all(r.stalled_since for r in status.replicas) else None


def _why(path) -> str:
    return json.loads(path.read_text())["why"]


def _groups(snapshot) -> dict[str, list[str]]:
    return {group["summary"]: group["replicas"] for group in snapshot["groups"]}


def test_a_collective_timeout_on_kubernetes_names_the_rank_that_never_joined(tmp_path, monkeypatch, px_home):
    """The same hang with `collectiveTimeout: 5` on plain pods: master-0 and worker-0 give up
    waiting in their all_reduce after 5 s, and the follower, before it decides the run, asks the
    pod still running for its stacks to name it as the cause."""
    from jupyter_px.api import submit

    with backend_cluster(tmp_path, monkeypatch, px_home):
        topology = {
            "framework": "pytorch",
            "backend": "native",
            "environment": {"replicas": {"n_workers": 2}},
            "termination": {"collectiveTimeout": 5},
        }
        run = submit(hang_notebook(tmp_path), topology)
        status = run.wait(timeout=240)
    assert_worker_1_named(run, status)


@pytest.mark.parametrize("backend", ["native", "kubeflow"])
def test_a_deadlocked_dataloader_and_a_skipped_barrier_are_seen_and_named_on_kubernetes(
    backend, tmp_path, monkeypatch, px_home
):
    """The other two hangs (tests/hang_kinds.py), side by side, each replica in its own pod: the
    follower's stall stacks show worker-1 apart, and the collective timeout names worker-1, on
    plain pods (the follower decides) and on a PyTorchJob (its operator does, and the follower
    names the cause from the pods it left running)."""
    from jupyter_px.api import submit

    monkeypatch.setenv("PX_STALL_AFTER_S", "4")
    topology = {**HANG_TOPOLOGY, "backend": backend}
    with backend_cluster(tmp_path, monkeypatch, px_home):
        runs = {hang: submit(hang_kinds.notebook(tmp_path, hang), topology) for hang in hang_kinds.HANGS}
        try:
            for hang, run in runs.items():
                hang_kinds.stacks_of_the_hang(run, hang, timeout=180)
            for hang, run in runs.items():
                hang_kinds.assert_named(run.wait(timeout=240), hang)
        finally:
            for run in runs.values():
                run.stop()
