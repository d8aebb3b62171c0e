"""Elastic workers (`n_workers: "MIN:MAX"`) on Kubeflow's elastic PyTorchJob, on the simulated
cluster whose kubelet runs real processes: every pod runs torchrun's agent with the operator's
PET_* variables (tests/kube_sim/pytorch_job.py, from training-operator v1.9.0 elastic.go), the
master holds the c10d rendezvous.

worker-1's pod loses every process at once (agent and training: what a node's loss does to it).
The others go on from the shared checkpoint in a world of 2; when the kubelet restarts worker-1's
container (its restart policy: the test holds it until the smaller group has trained, as a pod
whose node comes back later), its agent joins, and the group takes it back in a world of 3. What
each step computed says which world it ran in: every rank all-reduces a one, and rank 0 logs the
sum (`tests/jobs/elastic_train.py`). Then `jupyter px kill` ends worker-1's training (not its
container): its agent starts the group again with the same members. Each group torchrun formed
again is the run's next attempt, as the run's status shows it (`follower/elastic_rounds.py`).
"""

from __future__ import annotations

import signal
from itertools import pairwise
from pathlib import Path

import pytest
from kube_sim_support import backend_cluster, lose_pod
from waiting import wait_for

from jupyter_px.api import submit
from jupyter_px.presentation.text import attempt_lines
from jupyter_px.runstore.checkpoints import all_checkpoints
from jupyter_px.service import RunService

pytestmark = pytest.mark.kube

#: A DDP job written for elastic workers (a shared checkpoint every 5 steps, rank 0 logs the world
#: each step ran in), trained until the test releases it.
TRAIN = Path(__file__).parent / "jobs" / "elastic_train.py"

TOPOLOGY = {
    "framework": "pytorch",
    "backend": "kubeflow",
    "environment": {
        "replicas": {
            "n_workers": "1:2",
            "default_worker": {"restart_policy": "OnFailure", "max_restarts": 1},
        }
    },
}


def _worlds(run) -> list[tuple[float, int, float]]:
    """(time, step, world) as rank 0 logged them, from whichever replica it was, in time order.
    A re-formed group logs again the steps after the checkpoint it resumed at: they are here
    twice, each with its world."""
    points = []
    for series in run.metrics().values():
        if "world" in series:
            points += zip(series["world"].times, series["world"].steps, series["world"].values, strict=True)
    return sorted(points)


def _runs_of(worlds: list[tuple[float, int, float]]) -> list[float]:
    """The worlds in the order the steps ran in, each run of equal worlds once: [3, 2, 3]."""
    out: list[float] = []
    for _, _, world in worlds:
        if not out or out[-1] != world:
            out.append(world)
    return out


def test_an_elastic_pytorchjob_goes_on_without_a_lost_worker_and_takes_it_back(tmp_path, monkeypatch, px_home):
    kubelet = {"claims": {"px-runs": str(px_home)}}
    release = tmp_path / "release"
    with backend_cluster(tmp_path, monkeypatch, px_home, kubelet=kubelet) as sim:
        monkeypatch.setenv("PX_K8S_SHARED_CLAIM", "px-runs")  # the shared checkpoint: the run store, on a claim
        monkeypatch.setenv("PX_K8S_SHARED_MOUNT_PATH", str(px_home))
        run = submit(TRAIN, TOPOLOGY, args=["--until", str(release), "--step-sleep", "0.2"], name="elastic")
        try:
            env = {e["name"]: e.get("value") for e in _pod(sim, "worker", 1)["spec"]["containers"][0]["env"]}
            assert env["PET_NNODES"] == "2:3" and env["PET_RDZV_BACKEND"] == "c10d", env
            assert env["PET_RDZV_ENDPOINT"] == f"{_job_name(sim)}-master-0:23456", env

            outputs = str(run.paths.outputs_dir)
            wait_for(lambda: any(c.step >= 10 for c in all_checkpoints(outputs)), "a checkpoint at step 10", 240)
            wait_for(lambda: _runs_of(_worlds(run))[-1:] == [3.0], "steps in a world of 3", 120)
            # worker-1's container comes back once the others have gone on without it, as a pod
            # does once its node is back (the kubelet would restart it at once: it would join
            # while they re-form, and the test would not see them go on without it)
            sim.kubelet.restarts_held = True
            assert lose_pod(run.run_id, "worker", 1) >= 2  # its agent and its training
            wait_for(lambda: _runs_of(_worlds(run))[-2:] == [3.0, 2.0], "steps without worker-1", 240)
            sim.kubelet.restarts_held = False
            wait_for(lambda: _runs_of(_worlds(run))[-3:] == [3.0, 2.0, 3.0], "steps with worker-1 back", 180)
            # `jupyter px kill` ends worker-1's training, not its container: its agent starts the
            # group again, with the same members, and the run names the kill
            formed = len(run.status().attempts)
            RunService().kill(run.run_id, "worker", 1, signal.SIGKILL)
            wait_for(lambda: len(run.status().attempts) > formed, "the group formed again after the kill", 180)
            release.touch()
            status = run.wait(timeout=180)
        finally:
            run.stop()

    assert status.state.value == "Succeeded", status
    assert status.replica("worker", 1).restarts == 1, status.replica("worker", 1)
    worlds = _worlds(run)
    assert _runs_of(worlds)[-3:] == [3.0, 2.0, 3.0], worlds
    # each group went on from a checkpoint: no step skipped, and the last step in a world of 3
    steps = {step for _, step, _ in worlds}
    assert steps == set(range(1, max(steps) + 1)), sorted(steps)
    log = run.logs("worker", 1, tail=None)
    assert log.count(" of 3 starts after step ") >= 2, log  # before its loss, and back

    # each group torchrun formed again is an attempt of the run, as a local run's re-formings are
    attempts = status.attempts
    assert status.attempt == len(attempts) >= 3 and status.max_attempts >= status.attempt, status
    sizes = [a.workers for a in attempts]
    assert [n for i, n in enumerate(sizes) if i == 0 or sizes[i - 1] != n][-3:] == [2, 1, 2], attempts
    left = next(a for a, b in pairwise(attempts) if (a.workers, b.workers) == (2, 1))
    assert left.failed == "worker-1" and left.retried and left.step is not None, left
    back = next(a for a, b in pairwise(attempts) if (a.workers, b.workers) == (1, 2))
    assert back.returned == "worker-1", back
    for ended, following in pairwise(attempts):  # each went on from a shared checkpoint
        assert following.resumed_from is not None and following.resumed_from % 5 == 0, following
        assert ended.step is None or following.resumed_from <= ended.step, (ended, following)
    killed = attempts[-2]  # the kill's: the last group has the same members
    assert (killed.failed, killed.signal, killed.workers, attempts[-1].workers) == ("worker-1", "SIGKILL", 2, 2), killed
    lines = attempt_lines(status)
    assert lines[-1].endswith(f"worker-1 killed by SIGKILL at step {killed.step:,}; started again"), lines
    assert f"attempt {status.attempt} of {status.max_attempts} with 2 workers" in lines[0], lines
    assert any("worker-1 " in line and "went on without it" in line for line in lines), lines
    assert any("worker-1 came back" in line for line in lines), lines
    master_log = run.logs("master", 0, tail=None)
    assert "--- attempt 2 (from step " in master_log, master_log[-2000:]


def _job_name(sim) -> str:
    (job,) = sim.list("pytorchjobs", "default")
    return job["metadata"]["name"]


def _pod(sim, role: str, index: int) -> dict:
    name = f"{_job_name(sim)}-{role}-{index}"
    wait_for(lambda: any(p["metadata"]["name"] == name for p in sim.list("pods", "default")), f"pod {name}", 120)
    return next(p for p in sim.list("pods", "default") if p["metadata"]["name"] == name)
