"""The SSH backend on real sshd servers (tests/ssh_hosts.py): host-a and host-b, 2 slots each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ssh_hosts import processes_of, ssh_hosts_fixture, use_ssh_fixture  # noqa: F401 (fixtures)
from waiting import wait_for

from jupyter_px.processes import ports
from jupyter_px.service import RunService, ScriptFile, Submission

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
pytestmark = pytest.mark.ssh

FAULTS = Path(__file__).parent / "jobs" / "faults.py"
DEADLINE_S = 240.0


def quickstart() -> dict:
    import yaml

    topology = yaml.safe_load((EXAMPLES / "pytorch.yaml").read_text())
    topology["backend"] = "ssh"
    return topology


def small(workers: int = 2) -> dict:
    return {
        "version": 1,
        "kind": "experiment",
        "framework": "pytorch",
        "backend": "ssh",
        "environment": {"replicas": {"n_workers": workers}},
    }


def test_the_quickstart_all_reduces_across_the_hosts(use_ssh, px_home):
    service = RunService()
    run_id = service.submit(Submission(ScriptFile(EXAMPLES / "allreduce.py"), quickstart(), name="quickstart"))
    status = service.wait(run_id, timeout=DEADLINE_S)
    assert status.state.value == "Succeeded", (status, service.log_tail(run_id, "master", 0))
    plan = json.loads((px_home / "runs" / run_id / "ssh" / "plan.json").read_text())
    placed = {f"{r['role']}-{r['index']}": r["host"] for r in plan["replicas"]}
    assert placed == {"master-0": "host-a", "worker-0": "host-a", "worker-1": "host-b"}, placed
    below_the_kernels = ports.pool(ports.ephemeral_range())  # where no outgoing connection takes one
    assert all(int(r.address.rsplit(":", 1)[1]) in below_the_kernels for r in status.replicas), status.replicas
    for role, index in (("master", 0), ("worker", 0), ("worker", 1)):
        log = service.log_tail(run_id, role, index)
        assert "all_reduce of ranks = 3 (expected 3)" in log, log
    metrics = service.metrics(run_id)
    for key in ("master-0", "worker-0", "worker-1"):  # each rank's loss, in the store
        assert len(metrics[key]["loss"].steps) == 20, metrics.get(key)
    assert not processes_of(run_id)


def test_without_a_shared_filesystem_the_code_is_copied_and_metrics_and_outputs_come_back(
    use_ssh, px_home, tmp_path, monkeypatch
):
    monkeypatch.setenv("PX_SSH_SHARED_FILESYSTEM", "no")
    service = RunService()
    run_id = service.submit(Submission(ScriptFile(EXAMPLES / "allreduce.py"), quickstart(), name="copied"))
    status = service.wait(run_id, timeout=DEADLINE_S)
    assert status.state.value == "Succeeded", (status, service.log_tail(run_id, "worker", 1))
    assert "all_reduce of ranks = 3" in service.log_tail(run_id, "worker", 1)
    # the replicas did not write the store: their metrics came back in their output, and were parsed
    assert "@px-metrics" in service.log_tail(run_id, "master", 0)
    metrics = service.metrics(run_id)
    assert all(len(metrics[key]["loss"].steps) == 20 for key in ("master-0", "worker-0", "worker-1")), metrics
    assert not (tmp_path / "remote" / run_id).exists()  # the copy is gone now that its files are back


def test_a_failing_rank_names_its_replica_and_the_others_are_stopped(use_ssh, px_home):
    service = RunService()
    run_id = service.submit(Submission(ScriptFile(FAULTS), small(), args=("exit", "worker-1", "3"), name="fails"))
    status = service.wait(run_id, timeout=DEADLINE_S)
    replicas = {r.key: r for r in status.replicas}
    assert status.state.value == "Failed" and status.reason == "ReplicaFailed", status
    assert "worker-1 failed" in status.message, status.message
    failed = replicas["worker-1"]
    assert failed.state.value == "Failed" and failed.exit_code == 3 and failed.reason == "Error", failed
    assert "on host-b" in (failed.message or ""), failed.message
    assert "worker-1: doing exit 3" in service.log_tail(run_id, "worker", 1)
    for key in ("master-0", "worker-0"):
        assert replicas[key].state.value == "Stopped" and replicas[key].reason == "StoppedByRun", replicas[key]
    assert not processes_of(run_id)


def _sleeping(service: RunService, px_home: Path, name: str) -> tuple[str, dict[str, list[int]]]:
    """A run whose three replicas each start two children and sleep, once they all have: its id,
    and each replica's children (the replicas are forks of their entries: /proc shows the entry's
    environment for them, so they are counted through their children)."""
    run_id = service.submit(Submission(ScriptFile(FAULTS), small(), args=("sleep",), name=name))
    outputs = px_home / "runs" / run_id / "outputs"
    keys = ("master-0", "worker-0", "worker-1")
    wait_for(lambda: all((outputs / f"{k}.json").exists() for k in keys), "every replica to start its children")
    return run_id, {k: json.loads((outputs / f"{k}.json").read_text())["children"] for k in keys}


def test_stop_leaves_no_process_on_any_host(use_ssh, px_home):
    service = RunService()
    run_id, children_of = _sleeping(service, px_home, "sleeps")
    children = [pid for pids in children_of.values() for pid in pids]
    assert len(processes_of(run_id)) == 6  # each replica's two children
    service.stop(run_id)
    status = service.status(run_id)
    assert status.state.value == "Stopped" and status.reason == "StoppedByUser", status
    assert all(r.state.value == "Stopped" for r in status.replicas), status.replicas
    wait_for(lambda: not processes_of(run_id), "no process of the run on any host", timeout=30)
    import psutil

    assert not [pid for pid in children if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]
    for host in use_ssh.names():  # nothing of the run in any host's sessions either
        done = use_ssh.ssh(host, "pgrep", "-f", f"[{run_id[0]}]{run_id[1:]}")  # not pgrep's own shell
        assert done.returncode == 1, (host, done.stdout)


def test_a_replica_killed_on_its_host_takes_its_children_and_fails_the_run_naming_it(use_ssh, px_home):
    """`jupyter px kill` over ssh: worker-1's process group gets the signal on host-b, as on a crash."""
    import psutil
    from px_cli import px

    service = RunService()
    run_id, children_of = _sleeping(service, px_home, "killed")
    children = children_of["worker-1"]
    done = px("kill", run_id, "worker-1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"sent SIGKILL to worker-1 of run {run_id} (on host host-b, pid "), done.stdout
    status = service.wait(run_id, timeout=DEADLINE_S)
    assert status.state.value == "Failed" and status.message.startswith("worker-1 failed"), status
    killed = status.replica("worker", 1)
    assert (killed.exit_code, killed.signal) == (137, "SIGKILL"), killed
    assert not [pid for pid in children if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]
    wait_for(lambda: not processes_of(run_id), "no process of the run on any host", timeout=30)


def test_a_host_that_does_not_answer_is_refused_before_anything_is_recorded(use_ssh, px_home, monkeypatch):
    from jupyter_px.service import BackendError

    monkeypatch.setenv("PX_SSH_HOSTS", "host-a slots=1,host-nowhere slots=2")
    service = RunService()
    with pytest.raises(BackendError) as refused:
        service.submit(Submission(ScriptFile(FAULTS), small(), args=("env",), name="nowhere"))
    message = str(refused.value)
    assert message.startswith("host host-nowhere: ssh failed: ") and "\n" not in message, message
    assert "host-nowhere" in message.split("ssh failed: ", 1)[1]  # in ssh's own words
    assert service.run_ids() == []


def test_a_follower_killed_takes_its_replicas_with_it_and_a_keeper_says_so(use_ssh, px_home):
    import os
    import signal

    service = RunService()
    run_id = service.submit(Submission(ScriptFile(FAULTS), small(), args=("sleep",), name="orphan"))
    outputs = px_home / "runs" / run_id / "outputs"
    wait_for(lambda: all((outputs / f"{k}.json").exists() for k in ("master-0", "worker-0", "worker-1")), "a start")
    owner = service.status(run_id).owner
    assert owner is not None and owner.kind == "follower"
    os.kill(owner.pid, signal.SIGKILL)  # its ssh sessions close: each entry stops its replica
    wait_for(lambda: not processes_of(run_id), "the replicas to go with their follower", timeout=60)
    assert service.observe(run_id).owner_problem == "nobody is following this run"
    status = service.backend_of(run_id).reconcile(run_id)  # a keeper: a new follower finds the sessions gone
    status = service.wait(run_id, timeout=60)
    assert status.state.value == "Lost" and "its follower was gone" in (status.message or ""), status


def test_a_replica_that_cannot_start_on_its_host_fails_the_run_naming_it(use_ssh, px_home, monkeypatch):
    monkeypatch.setenv("PX_SSH_PYTHON", "/nonexistent/bin/python3")
    service = RunService()
    run_id = service.submit(Submission(ScriptFile(FAULTS), small(workers=1), args=("env",), name="nopython"))
    status = service.wait(run_id, timeout=DEADLINE_S)
    assert status.state.value == "Failed" and status.reason == "StartFailed", status
    message = status.message or ""
    assert message.startswith("master-0 on host-a did not start: ") and "/nonexistent/bin/python3" in message, message
    assert "\n" not in message
    assert not processes_of(run_id)
