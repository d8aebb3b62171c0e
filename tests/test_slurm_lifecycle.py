"""How a Slurm run lives and ends, on a real cluster (tests/slurm_cluster): a failing rank, a
node that fails, a request no node can meet, a job that waits in the queue, a stop mid-run, and
one `squeue` for every followed run. (A replica over its memory: test_slurm_sites.py, on both
site configurations.)"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path

import pytest
from slurm_cluster import SlurmUnavailable
from slurm_support import (  # noqa: F401 (fixtures)
    DEADLINE_S,
    STOPPABLE,
    gone,
    job_id,
    queued,
    slurm_cluster_fixture,
    topology_of,
    use_slurm_fixture,
    wait_for,
)

from jupyter_px.runstore import RunStore
from jupyter_px.service import ResourceUnavailable, RunService, ScriptFile, SourceText, Submission

pytestmark = pytest.mark.slurm

FAULTS = Path(__file__).parent / "jobs" / "faults.py"


def test_a_failing_rank_fails_the_run_with_its_exit_code_and_log(use_slurm, px_home):
    service = RunService()
    run_id = service.submit(Submission(ScriptFile(FAULTS), topology_of(), args=("exit", "worker-1", "3"), name="fails"))
    status = service.wait(run_id, timeout=DEADLINE_S)
    replicas = {r.key: r for r in status.replicas}
    assert status.state.value == "Failed" and status.reason == "ReplicaFailed", status
    assert "worker-1 failed" in status.message
    failed = replicas["worker-1"]
    assert failed.state.value == "Failed" and failed.exit_code == 3 and failed.reason == "Error", failed
    assert "worker-1: doing exit 3" in service.log_tail(run_id, "worker", 1)
    for key in ("master-0", "worker-0"):  # still waiting when worker-1 failed: stopped, so recorded
        assert replicas[key].state.value == "Stopped" and replicas[key].reason == "StoppedByRun", replicas[key]
        assert replicas[key].message == "stopped because worker-1 failed"
        role, index = key.split("-")
        assert f"{key}: waiting" in service.log_tail(run_id, role, int(index))
    # the follower writes the run's end, then sees the job out of the queue (cancelling it if it lingers)
    job = job_id(px_home, run_id)
    wait_for(lambda: not queued(use_slurm, job), "the job to leave the queue", timeout=30)


def test_a_request_larger_than_any_node_is_refused_before_anything_is_queued(use_slurm, px_home):
    service = RunService()
    with pytest.raises(ResourceUnavailable) as refused:
        service.submit(Submission(ScriptFile(FAULTS), topology_of(memory=9000), args=("env",), name="huge"))
    message = str(refused.value)
    assert "sbatch --test-only" in message and "Requested node configuration is not available" in message
    assert "9000 MiB" in message and "4000 MiB" in message  # what it asks, what the largest node has
    assert "\n" not in message
    assert not queued(use_slurm) and RunStore().run_ids() == []  # nothing queued, no run recorded


def test_a_job_waits_with_reason_resources_and_its_queue_position_then_runs(use_slurm, px_home):
    service = RunService()
    # every CPU of the three nodes taken by a run that waits until stopped
    blocker = service.submit(Submission(ScriptFile(FAULTS), topology_of(cpu=4), args=("sleep",), name="blocker"))
    wait_for(lambda: service.status(blocker).state.value == "Running", "the blocker to run")
    first = service.submit(Submission(ScriptFile(FAULTS), topology_of(workers=1), args=("env",), name="first"))
    second = service.submit(Submission(ScriptFile(FAULTS), topology_of(workers=0), args=("env",), name="second"))

    def waiting(run_id: str, reason: str, place: str):
        status = service.status(run_id)
        if status.state.value == "Pending" and status.reason == reason and place in (status.message or ""):
            return status
        return None

    # as squeue says it: the first job in line waits for Resources, the ones behind it for Priority
    status = wait_for(lambda: waiting(first, "Resources", "1st of 2"), "the first run to wait for Resources")
    assert f"Slurm job {job_id(px_home, first)} is PENDING in partition debug's queue: 1st of 2 (Resources)" == (
        status.message
    )
    assert {r.state.value for r in status.replicas} == {"Pending"}
    assert {r.reason for r in status.replicas} == {"Resources"}
    status = wait_for(lambda: waiting(second, "Priority", "2nd of 2"), "the second run to wait behind it")
    assert status.message.endswith("queue: 2nd of 2 (Priority)")

    service.stop(blocker)  # frees the nodes: both run
    for run_id in (first, second):
        final = service.wait(run_id, timeout=DEADLINE_S)
        assert final.state.value == "Succeeded", final
        outputs = RunStore().paths(run_id).outputs_dir
        assert json.loads((outputs / "master-0.json").read_text())["env"]["PX_RUN_ID"] == run_id
    assert not queued(use_slurm)


def test_stop_mid_run_leaves_nothing_in_the_queue_and_keeps_logs_and_metrics(use_slurm, px_home):
    service = RunService()
    run_id = service.submit(Submission(SourceText(STOPPABLE), topology_of(), name="stopme"))
    outputs = RunStore().paths(run_id).outputs_dir
    wait_for(lambda: len(list(outputs.iterdir())) == 3, "every replica to log its steps")
    job = job_id(px_home, run_id)
    assert queued(use_slurm, job)
    started = time.monotonic()
    status = service.stop(run_id)
    assert time.monotonic() - started < 10 + 30  # the grace (PX_STOP_GRACE_S=10 here) bounds it
    assert status.state.value == "Stopped" and status.reason == "StoppedByUser", status
    assert not queued(use_slurm, job)  # nothing of the run left in squeue
    assert {r.state.value for r in status.replicas} == {"Stopped"}
    assert {r.exit_code for r in status.replicas} == {143}  # SIGTERM first: they could flush
    for role, index in service.replicas(run_id):
        assert "logged 50 steps" in service.log_tail(run_id, role, index)
    metrics = service.metrics(run_id)
    assert {key: len(series["loss"].steps) for key, series in metrics.items()} == {
        "master-0": 50,
        "worker-0": 50,
        "worker-1": 50,
    }


def test_one_squeue_serves_every_followed_run(use_slurm, px_home):
    service = RunService()
    runs = [
        service.submit(Submission(SourceText(STOPPABLE), topology_of(workers=0), name=f"watched{i}")) for i in range(3)
    ]
    for run_id in runs:
        wait_for(lambda run_id=run_id: service.status(run_id).state.value == "Running", f"{run_id} to run")
    (snapshot,) = (px_home / "slurm").glob("queue-*.json")
    before, t0 = json.loads(snapshot.read_text())["polls"], time.monotonic()
    time.sleep(6)
    polls, elapsed = json.loads(snapshot.read_text())["polls"] - before, time.monotonic() - t0
    # three followers polling every 0.5 s each would run ~36 squeue in 6 s; shared, about 12
    assert polls <= elapsed / 0.5 + 3, polls
    assert polls >= 3  # and it is polled all along
    for run_id in runs:
        service.stop(run_id)
    assert not queued(use_slurm)


def test_the_keeper_follows_a_slurm_run_whose_follower_died(use_slurm, px_home):
    import os
    import signal

    service = RunService()
    release = px_home / "release"
    code = f"import os, time\nwhile not os.path.exists({str(release)!r}):\n    time.sleep(0.05)\n"
    run_id = service.submit(Submission(SourceText(code), topology_of(workers=1), name="kept"))
    wait_for(lambda: service.status(run_id).state.value == "Running", "the run to run")
    owner = service.status(run_id).owner
    assert owner is not None and owner.kind == "follower"
    os.kill(owner.pid, signal.SIGKILL)
    wait_for(lambda: service.observe(run_id).owner_problem, "a read to report the missing follower")
    for _ in range(3):  # reads never act: nobody starts a follower for them
        assert service.observe(run_id).owner_problem == "nobody is following this run"
        assert service.status(run_id).owner.pid == owner.pid
    assert service.keep_all() == 1  # the Jupyter server's keeper: one unfinished run, followed again
    assert service.observe(run_id).owner_problem is None and service.status(run_id).owner.pid != owner.pid
    release.write_text("go")
    final = service.wait(run_id, timeout=DEADLINE_S)
    assert final.state.value == "Succeeded" and final.owner is None, final


BURST = 90_000


def test_a_burst_stopped_at_once_keeps_every_point(use_slurm, px_home, monkeypatch):
    """The reliability rule on Slurm: the stop's SIGTERM reaches each replica through Slurm
    (`scancel --signal=TERM`), tracking writes everything it accepted within the grace, and the
    task settles the replica's metrics on its node before it records its end."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    monkeypatch.setenv("PX_STOP_GRACE_S", "30")
    service = RunService()
    burst = Path(__file__).parent / "jobs" / "burst.py"
    run_id = service.submit(
        Submission(ScriptFile(burst), topology_of(workers=1, memory=600), args=(str(BURST),), name="burst")
    )
    outputs = RunStore().paths(run_id).outputs_dir
    wait_for(lambda: len(list(outputs.glob("*.json"))) == 2, "both replicas to log their burst")
    started = time.monotonic()
    status = service.stop(run_id)
    assert time.monotonic() - started < 30 + 15, "the stop waited out more than the grace"
    assert status.state.value == "Stopped", status
    paths = RunStore().paths(run_id)
    for replica in status.replicas:
        lines = paths.metrics(replica.role, replica.index).read_text().splitlines()
        assert [json.loads(line)["step"] for line in lines] == list(range(BURST)), replica.key
        accumulator = EventAccumulator(
            str(paths.tensorboard(replica.role, replica.index)), size_guidance={"scalars": 0}
        )
        accumulator.Reload()
        assert len(accumulator.Scalars("loss")) == BURST, replica.key
        assert replica.points_lost == 0 and "not written" not in (replica.message or ""), replica
    assert not list(paths.metrics_dir.glob(".*.ledger"))  # each task settled its replica's ledgers
    gone(use_slurm, job_id(px_home, run_id))


# last in this module: the node may hold the failed job's CPUs a while after it is back
def test_a_node_failure_names_the_replica_on_that_node_and_its_peers_stopped(use_slurm, px_home):
    service = RunService()
    run_id = service.submit(Submission(SourceText(STOPPABLE), topology_of(cpu=3), name="nodefail"))  # a node each
    outputs = RunStore().paths(run_id).outputs_dir
    wait_for(lambda: len(list(outputs.iterdir())) == 3, "every replica to log its steps")
    job = job_id(px_home, run_id)
    task = json.loads((RunStore().paths(run_id).root / "slurm" / f"job-{job}" / "task-2.json").read_text())
    node = task["node"]  # worker-1's (procid 2)
    use_slurm.run(["scontrol", "update", f"NodeName={node}", "State=DOWN", "Reason=disk-failure"])
    try:
        status = service.wait(run_id, timeout=DEADLINE_S)
    finally:
        wait_for(lambda: not queued(use_slurm, job), "the job to leave the queue", timeout=60)
        wait_for(lambda: _resumed(use_slurm, node), f"{node} to be back", timeout=60)
    replicas = {r.key: r for r in status.replicas}
    assert status.state.value == "Failed" and status.message == f"worker-1 failed (NodeFail): its node {node} failed"
    assert replicas["worker-1"].reason == "NodeFail", replicas["worker-1"]
    for key in ("master-0", "worker-0"):  # Slurm ended their steps too: because of worker-1's node
        assert replicas[key].state.value == "Stopped", replicas[key]
        assert replicas[key].message == "stopped because worker-1 lost its node", replicas[key]
    for role, index in service.replicas(run_id):  # their logs stay
        assert "logged 50 steps" in service.log_tail(run_id, role, index)


def _resumed(cluster, node: str) -> bool:
    """True once the node takes jobs again (ReturnToService=2 brings it back as soon as its slurmd
    registers; RESUME where it has not, refused while it still completes the job)."""
    state = cluster.run(["sinfo", "--noheader", "--Node", "--format=%t", "-n", node]).strip()
    if state.startswith(("down", "drain")):
        with contextlib.suppress(SlurmUnavailable):
            cluster.run(["scontrol", "update", f"NodeName={node}", "State=RESUME"])
    return state in ("idle", "mix")  # usable again (it may hold the failed job's CPUs a while longer)
