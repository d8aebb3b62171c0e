"""Resumable runs on a real Slurm cluster (tests/slurm_cluster): a run with `termination:
{maxRetries: N}` is requeued, and goes on from its checkpoints as its next attempt, when its job
nears its time limit (Slurm's `--signal=B:USR1@<grace>`: the replicas checkpoint, then `scontrol
requeue`) and when a node of it is lost (Slurm requeues a `--requeue` job after a node failure).

This module's cluster gives the job credential a 15 s lifetime (`AuthInfo cred_expire`), which is
also how long Slurm holds a requeued job back (120 s by default, slurm.conf(5)); the time-limit test
uses Slurm's shortest limit (1 minute) and a 10 s grace: about 90 s in all here.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_cluster.daemons import cgroup_pids, node_cgroups, read_pid, wait_for_pid_file
from slurm_support import (  # noqa: F401 (fixtures)
    DEADLINE_S,
    gone,
    job_id,
    started_cluster,
    topology_of,
    use_slurm_fixture,
    wait_for,
)

from jupyter_px.presentation.text import status_heading
from jupyter_px.runstore import RunStore
from jupyter_px.service import RunService, ScriptFile, Submission
from jupyter_px.service.views import run_detail

pytestmark = pytest.mark.slurm

TRAIN = Path(__file__).parent / "jobs" / "requeue_train.py"
FAULTS = Path(__file__).parent / "jobs" / "faults.py"


@pytest.fixture(scope="module", name="slurm_cluster")
def requeue_cluster_fixture() -> Iterator:
    """Three nodes; a requeued job may start again 15 s after its requeue (Slurm's default: 120 s)."""
    with started_cluster(cred_expire_s=15) as cluster:
        yield cluster


def _reference(steps: int) -> dict[int, dict]:
    """What an uninterrupted run computes, rank by rank (the script's own `train`)."""
    spec = importlib.util.spec_from_file_location("requeue_train", TRAIN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {rank: module.train(rank, steps) for rank in (0, 1)}


def _finals(run_id: str) -> dict[int, dict]:
    outputs = RunStore().paths(run_id).outputs_dir
    return {rank: json.loads((outputs / f"final-{rank}.json").read_text()) for rank in (0, 1)}


def test_a_job_at_its_time_limit_checkpoints_is_requeued_and_ends_as_attempt_2(
    use_slurm, px_home, tmp_path, monkeypatch
):
    settings = tmp_path / "slurm.yaml"
    # Two minutes: the warning signal "may be sent up to 60 seconds earlier than specified" (sbatch(1),
    # --signal), so with one minute it could come 20 s in, before the ranks of a loaded machine had
    # imported torch and taken a step to checkpoint; with two, 50 s in at the earliest.
    settings.write_text("time_limit: '2'\ncheckpoint_grace_s: 10\n")
    monkeypatch.setenv("PX_SLURM_CONFIG", str(settings))
    # one retry: the second attempt, which Slurm may signal too, is not requeued again
    topology = {**topology_of(workers=1, memory=700), "termination": {"maxRetries": 1}}
    service = RunService()
    steps, hold = 80, 37  # the first attempt waits at step 37 for Slurm's signal
    args = (str(steps), "0.1", str(hold))
    run_id = service.submit(Submission(ScriptFile(TRAIN), topology, args=args, name="timelimit"))
    job = job_id(px_home, run_id)
    script = (RunStore().paths(run_id).root / "slurm" / "job.sh").read_text()
    assert "#SBATCH --requeue\n#SBATCH --signal=B:USR1@10\n#SBATCH --open-mode=append\n" in script

    def requeued():
        status = service.status(run_id)
        return status if status.attempt == 2 and (status.message or "").startswith("Requeued") else None

    during = wait_for(requeued, "the run to say it was requeued", timeout=DEADLINE_S)
    status = service.wait(run_id, timeout=DEADLINE_S)
    assert status.state.value == "Succeeded", status
    assert status.attempt == 2 and status.max_attempts == 2, status
    first, second = status.attempts
    assert (first.attempt, first.failed, first.reason, first.retried) == (1, f"Slurm job {job}", "TimeLimit", True)
    # the checkpoint both ranks saved when asked (at step 37, or before it when Slurm's signal, which
    # "may be sent up to 60 seconds earlier than specified", came sooner)
    resumed = second.resumed_from
    assert resumed is not None and 0 < resumed <= hold, status.attempts
    assert during.message.startswith(f"Requeued (TimeLimit), attempt 2 of 2, resumed at step {resumed:,}: ")
    assert first.describe() == f"Slurm job {job} requeued (TimeLimit) at step {first.step:,}"
    view = service.view(run_id)  # what REST (px/api/runs/<id>) and `jupyter px status --json` answer
    detail = run_detail(view.record, view.status, view.owner_problem)
    assert (detail["attempt"], detail["max_attempts"]) == (2, 2)
    assert [(a["attempt"], a["reason"], a["resumed_from"]) for a in detail["attempts"]] == [
        (1, "TimeLimit", None),
        (2, None, resumed),
    ]
    heading = status_heading(status).splitlines()  # `jupyter px status`, the run view's attempt line
    assert f"attempt 2 of 2, from step {resumed:,}" in heading
    assert f"  attempt 1: Slurm job {job} requeued (TimeLimit) at step {first.step:,}; started again" in heading
    logs = {role: service.log_tail(run_id, role, 0, tail=None) for role in ("master", "worker")}
    for text in logs.values():
        assert f"attempt 2, from step {resumed}" in text, text[-2000:]
        assert f"--- attempt 2 (from step {resumed:,}): Slurm job {job} requeued (TimeLimit)" in text
        assert "attempt 1, from step 0" in text  # the first attempt's log kept
        assert f"checkpoint at step {resumed}, as asked" in text
    batch = (RunStore().paths(run_id).root / "slurm" / "batch.out").read_text()
    assert "near its time limit: asking the replicas for a checkpoint" in batch
    assert f"requeueing Slurm job {job} (scontrol requeue)" in batch
    # what an uninterrupted run computes, to the bit
    assert _finals(run_id) == _reference(steps)
    gone(use_slurm, job)


def _stop_node(cluster, node: str) -> None:
    """The node is lost: its slurmd and every process of its jobs killed (as a power cut would),
    then marked DOWN, as slurmctld does itself once the node has not answered for SlurmdTimeout
    (60 s here)."""
    root = Path(cluster.conf).parent
    os.kill(read_pid(root / "run" / f"slurmd-{node}.pid") or 0, signal.SIGKILL)
    for folder in node_cgroups(node):
        for pid in cgroup_pids(folder):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    cluster.run(["scontrol", "update", f"NodeName={node}", "State=DOWN", "Reason=lost"])


def _start_node(cluster, node: str) -> None:
    root = Path(cluster.conf).parent
    (root / "run" / f"slurmd-{node}.pid").unlink(missing_ok=True)
    subprocess.run(["slurmd", "-N", node], env=cluster.client_env(), check=True, capture_output=True)
    wait_for_pid_file(root / "run" / f"slurmd-{node}.pid", f"slurmd {node}", None)

    def back() -> bool:
        state = cluster.run(["sinfo", "--noheader", "--Node", "--format=%t", "-n", node]).strip()
        if state.startswith(("down", "drain")):
            subprocess.run(
                ["scontrol", "update", f"NodeName={node}", "State=RESUME"], env=cluster.client_env(), check=False
            )
        return state in ("idle", "mix")

    wait_for(back, f"{node} to take jobs again", timeout=60)


def test_a_node_lost_mid_run_requeues_the_job_which_resumes_from_its_checkpoints(use_slurm, px_home):
    topology = {**topology_of(workers=1, cpu=3, memory=700), "termination": {"maxRetries": 1}}  # a node each
    service = RunService()
    steps = 250
    run_id = service.submit(Submission(ScriptFile(TRAIN), topology, args=(str(steps), "0.1"), name="nodelost"))
    job = job_id(px_home, run_id)
    root = RunStore().paths(run_id).root
    checkpoints = root / "outputs" / "checkpoints"
    wait_for(
        lambda: all((checkpoints / key / "step-000000000050.pt").exists() for key in ("master-0", "worker-0")),
        "both replicas' checkpoint at step 50",
        timeout=DEADLINE_S,
    )
    node = json.loads((root / "slurm" / f"job-{job}" / "task-1.json").read_text())["node"]  # worker-0's
    _stop_node(use_slurm, node)
    try:
        status = service.wait(run_id, timeout=DEADLINE_S)
    finally:
        _start_node(use_slurm, node)
    assert status.state.value == "Succeeded", status
    assert status.attempt == 2, status
    first, second = status.attempts
    assert (first.failed, first.reason, first.retried) == ("worker-0", "NodeFail", True), first
    assert first.describe().startswith(f"worker-0 requeued (NodeFail: its node {node} failed) at step ")
    assert second.resumed_from is not None and second.resumed_from >= 50, second
    assert (root / "slurm" / f"job-{job}.1" / "attempt.json").exists()  # the second attempt's own records
    for role in ("master", "worker"):
        assert f"attempt 2, from step {second.resumed_from}" in service.log_tail(run_id, role, 0, tail=None)
    assert _finals(run_id) == _reference(steps)
    gone(use_slurm, job)


def test_a_replica_killed_by_a_signal_requeues_the_job_until_the_retries_run_out(use_slurm, px_home):
    """The follower's own requeue: worker-1 dies by SIGKILL (retried, Kubeflow's ExitCode policy),
    the job is requeued as attempt 2, where it dies again: out of retries, and the run says so."""
    topology = {**topology_of(workers=2), "termination": {"maxRetries": 1}}
    service = RunService()
    run_id = service.submit(Submission(ScriptFile(FAULTS), topology, args=("sigkill", "worker-1"), name="outofretries"))
    status = service.wait(run_id, timeout=DEADLINE_S)
    assert status.state.value == "Failed", status
    assert status.attempt == 2 and [a.attempt for a in status.attempts] == [1, 2], status
    assert status.message.endswith("; out of retries: attempt 2 of 2 failed (termination.max_retries: 1)"), status
    first = status.attempts[0]
    assert (first.failed, first.signal, first.retried) == ("worker-1", "SIGKILL", True), first
    log = service.log_tail(run_id, "master", 0, tail=None)
    assert "--- attempt 2 (from the start): worker-1 killed by SIGKILL ---" in log
    gone(use_slurm, job_id(px_home, run_id))


def test_a_permanent_failure_is_not_requeued(use_slurm, px_home):
    topology = {**topology_of(workers=2), "termination": {"maxRetries": 2}}
    service = RunService()
    run_id = service.submit(Submission(ScriptFile(FAULTS), topology, args=("exit", "worker-1", "3"), name="permanent"))
    status = service.wait(run_id, timeout=DEADLINE_S)
    assert status.state.value == "Failed" and status.attempt == 1, status
    assert "; not retried: exit code 3 of worker-1 is permanent (Kubeflow's ExitCode policy" in status.message
    gone(use_slurm, job_id(px_home, run_id))


def test_three_kills_with_jupyter_px_kill_requeue_the_job_which_ends_with_an_uninterrupted_run_s_model(
    use_slurm, px_home, capsys
):
    """`jupyter px kill` on Slurm (`kill_requests.py`: the request goes through the run directory
    the nodes share, the replica's task signals it on its node): a random rank is killed three
    times, each time once the attempt has saved a checkpoint; each kill requeues the job, which
    resumes from the newest checkpoint every rank has, and the final weights are bitwise those of
    a run without failures."""
    import random

    from jupyter_px.cli import main as cli_main

    topology = {**topology_of(workers=1, cpu=3, memory=700), "termination": {"maxRetries": 3}}  # a node each
    service = RunService()
    steps = 250
    run_id = service.submit(Submission(ScriptFile(TRAIN), topology, args=(str(steps), "0.05"), name="killed3"))
    checkpoints = RunStore().paths(run_id).outputs_dir / "checkpoints"
    chosen = random.Random(7)
    killed = []
    for attempt in (1, 2, 3):
        status = wait_for(
            lambda a=attempt: (
                (s := service.status(run_id)).attempt == a and (a == 1 or s.attempts[-1].resumed_from is not None) and s
            ),
            f"attempt {attempt} under way",
            timeout=DEADLINE_S,
        )
        start = status.attempts[-1].resumed_from if attempt > 1 else 0
        target = f"step-{start + 50:012d}.pt"
        wait_for(
            lambda t=target: all((checkpoints / key / t).exists() for key in ("master-0", "worker-0")),
            f"attempt {attempt}'s checkpoint {target}",
            timeout=DEADLINE_S,
        )
        victim = chosen.choice(["master-0", "worker-0"])
        wait_for(lambda: all(r.state.value == "Running" for r in service.status(run_id).replicas), "running")
        assert cli_main(["kill", run_id, victim]) == 0
        said = capsys.readouterr().out
        assert said.startswith(f"sent SIGKILL to {victim} of run {run_id} (on node "), said
        killed.append(victim)
    status = service.wait(run_id, timeout=DEADLINE_S)
    assert status.state.value == "Succeeded", status
    assert status.attempt == 4 and [a.failed for a in status.attempts[:3]] == killed, status.attempts
    assert all(a.signal == "SIGKILL" and a.retried for a in status.attempts[:3]), status.attempts
    assert all(a.resumed_from and a.resumed_from >= 50 for a in status.attempts[1:]), status.attempts
    assert _finals(run_id) == _reference(steps)
    heading = status_heading(status).splitlines()  # `jupyter px status`, the run view's attempt line
    assert any(line.startswith("attempt 4 of 4, from step ") for line in heading), heading
    for n, victim in enumerate(killed, start=1):
        assert any(line.startswith(f"  attempt {n}: {victim} killed by SIGKILL") for line in heading), heading
    gone(use_slurm, job_id(px_home, run_id))
