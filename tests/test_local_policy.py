"""The local supervisor's rules, on plain values: restart policy, run outcome (and a Kubeflow
job's, the same type), start order, servers, the typed `Ending`, and the memory guard against
real processes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from jupyter_px.backends.local import policy
from jupyter_px.backends.local.memory import MemoryGuard
from jupyter_px.backends.local.replica import Ending, EndReason, Replica
from jupyter_px.backends.outcome import Outcome, run_outcome
from jupyter_px.runstore import ReplicaState, ReplicaStatus, RunState, RunStatus
from jupyter_px.topology import parse_topology


@pytest.mark.parametrize(
    "policy_name, failed, code, decides, restarts",
    [
        ("Never", True, 1, False, False),
        ("OnFailure", True, 1, False, True),
        ("OnFailure", False, 0, False, False),
        ("ExitCode", True, 137, False, True),  # killed by SIGKILL: retryable
        ("ExitCode", True, 143, False, True),
        ("ExitCode", True, 3, False, False),  # the code's own failure: not retried
        ("Always", False, 0, False, True),  # a worker that finished restarts...
        ("Always", False, 0, True, False),  # ...unless its success ends the run
        ("Always", True, 1, True, True),
    ],
)
def test_should_restart_follows_the_policy(policy_name, failed, code, decides, restarts):
    assert (
        policy.should_restart(
            policy_name, failed=failed, exit_code=code, restarts=0, max_restarts=3, decides_run=decides
        )
        is restarts
    )


def test_should_restart_stops_at_max_restarts():
    allowed = [
        policy.should_restart("OnFailure", failed=True, exit_code=1, restarts=n, max_restarts=2, decides_run=False)
        for n in range(4)
    ]
    assert allowed == [True, True, False, False]


def test_restart_delay_doubles_and_is_capped():
    assert [policy.restart_delay(n) for n in range(7)] == [0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0]


def test_decides_run():
    assert policy.decides_run("master", has_master=True, other_workers_succeeded=False)
    assert not policy.decides_run("worker", has_master=True, other_workers_succeeded=True)
    assert policy.decides_run("worker", has_master=False, other_workers_succeeded=True)  # the last worker
    assert not policy.decides_run("worker", has_master=False, other_workers_succeeded=False)
    assert not policy.decides_run("ps", has_master=False, other_workers_succeeded=True)


def _replicas(**states: str) -> list[ReplicaStatus]:
    out = []
    for n, (key, state) in enumerate(states.items()):
        role, index = key.rsplit("_", 1)
        out.append(
            ReplicaStatus(
                role=role,
                index=int(index),
                state=ReplicaState(state),
                finished_at=100.0 - n,
                reason="Error",
                message="x",
            )
        )
    return out


def test_run_outcome():
    assert run_outcome(_replicas(master_0="Running", worker_0="Succeeded")) is None
    done = run_outcome(_replicas(master_0="Succeeded", worker_0="Running"))
    assert done == Outcome(RunState.SUCCEEDED, "Completed", "master-0 succeeded")
    workers = run_outcome(_replicas(worker_0="Succeeded", worker_1="Succeeded", ps_0="Running"))
    assert workers is not None and workers.message == "all 2 workers succeeded"
    assert run_outcome(_replicas(worker_0="Succeeded", worker_1="Running")) is None
    # two failures: the first to finish decides (worker_1 finished at 98, worker_0 at 99)
    failed = run_outcome(_replicas(master_0="Running", worker_0="Failed", worker_1="Failed"))
    assert failed == Outcome(RunState.FAILED, "ReplicaFailed", "worker-1 failed (Error): x", cause="worker-1")


def test_a_tensorflow_runs_outcome_and_failure_text_call_its_master_chief():
    """A TensorFlow master is `chief` in the run's message (which every surface shows) and in the
    failure text of `wait(check=True)`, the CLI and the magics, its log hint's role included."""
    from jupyter_px.run_text import failure_text
    from jupyter_px.topology.naming import ReplicaNames

    names = ReplicaNames.of(parse_topology({"framework": "tensorflow", "environment": {"replicas": {"n_workers": 1}}}))
    done = run_outcome(_replicas(master_0="Succeeded", worker_0="Running"), names)
    assert done is not None and done.message == "chief succeeded"
    replicas = _replicas(master_0="Failed", worker_0="Running")
    failed = run_outcome(replicas, names)
    assert failed is not None and (failed.message, failed.cause) == ("chief failed (Error): x", "chief")
    status = RunStatus(run_id="r1", state=RunState.FAILED, message=failed.message, replicas=replicas)
    text = failure_text(status, "px logs {run_id} --role {role} --index {index}", names=names)
    assert text.splitlines()[1:3] == ["  chief Failed (Error): x", "  its log: px logs r1 --role chief --index 0"]
    assert "master" not in text
    as_master = ReplicaNames.of({"framework": "tensorflow", "environment": {"tf_master_type": "master"}})
    assert run_outcome(_replicas(master_0="Succeeded"), as_master).message == "master-0 succeeded"


def test_a_kubeflow_jobs_conditions_are_the_same_outcome():
    """Kubeflow's operators apply the success policy themselves; their terminal condition reads as
    the Outcome the shared rule gives, the operator's reason kept, a missing one filled in."""
    from jupyter_px.backends.kubernetes.shared.pod_state import job_outcome

    def job(*conditions: dict) -> dict:
        return {"status": {"conditions": list(conditions)}}

    running = {"type": "Running", "status": "True"}
    assert job_outcome(None) is None and job_outcome(job(running)) is None
    succeeded = {"type": "Succeeded", "status": "True", "reason": "PyTorchJobSucceeded", "message": "done"}
    assert job_outcome(job(running, succeeded)) == Outcome(RunState.SUCCEEDED, "PyTorchJobSucceeded", "done")
    assert job_outcome(job({"type": "Complete", "status": "True"})) == Outcome(RunState.SUCCEEDED, "Completed", "")
    assert job_outcome(job({"type": "Failed", "status": "False"})) is None
    assert job_outcome(job({"type": "Failed", "status": "True", "message": "x"})) == Outcome(
        RunState.FAILED, "ReplicaFailed", "x"
    )


def test_start_order_and_servers():
    roles = ["worker", "evaluator", "ps", "master"]
    assert sorted(roles, key=lambda r: policy.start_rank(r, is_mpi=False)) == ["master", "ps", "worker", "evaluator"]
    assert sorted(["master", "worker"], key=lambda r: policy.start_rank(r, is_mpi=True)) == ["worker", "master"]
    assert policy.is_server("ps", framework="tensorflow", is_mpi=False, has_ps=True)
    assert policy.is_server("worker", framework="tensorflow", is_mpi=False, has_ps=True)
    assert not policy.is_server("worker", framework="tensorflow", is_mpi=False, has_ps=False)
    assert policy.is_server("worker", framework="mpi", is_mpi=True, has_ps=False)
    assert not policy.is_server("master", framework="pytorch", is_mpi=False, has_ps=False)


def test_ending_is_typed_and_only_oom_is_a_failure():
    assert Ending.oom("used 300 MiB").is_failure
    assert Ending.oom("m").reason is EndReason.OOM_KILLED and Ending.oom("m").state == ReplicaState.FAILED
    assert not Ending.by_user().is_failure and Ending.by_user().reason.value == "StoppedByUser"
    assert not Ending.by_run(ReplicaState.SUCCEEDED, "done").is_failure


def test_a_replica_that_never_ran_is_stopped_not_succeeded():
    spec = parse_topology({}).replicas()[0]
    never = Replica(spec, ReplicaStatus(role="master", index=0, reason=None))
    never.end_without_exit(Ending.by_run(ReplicaState.SUCCEEDED, "still running when the run succeeded; stopped"))
    assert (never.status.state, never.status.reason) == (ReplicaState.STOPPED, "StoppedByRun")
    assert never.status.finished_at is not None
    ran = Replica(spec, ReplicaStatus(role="master", index=0, reason=None, started_at=1.0))
    ran.end_without_exit(Ending.by_run(ReplicaState.SUCCEEDED, "stopped"))
    assert ran.status.state == ReplicaState.SUCCEEDED


def test_memory_guard_flags_a_real_process_over_its_limit_and_polls_at_its_pace():
    hog = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; b = bytearray(64 * 2**20); b[::4096] = b'x' * (len(b) // 4096); "
         "print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert hog.stdout is not None and hog.stdout.readline() == b"ready\n"
        guard = MemoryGuard({("worker", 0): 32.0, ("worker", 1): None, ("master", 0): 100000.0}, poll_s=10.0)
        assert guard.watches("worker", 0) and not guard.watches("worker", 1)
        assert not guard.watches("ps", 0)
        over = guard.poll([("worker", 0, hog.pid), ("master", 0, hog.pid)], now=1000.0)
        assert [(o.role, o.index) for o in over] == [("worker", 0)]
        assert "above its memory limit of 32 MiB" in over[0].message and over[0].kill_pids == ()
        assert guard.poll([("worker", 0, hog.pid)], now=1005.0) == []  # not due yet
        assert guard.next_poll == 1010.0
    finally:
        hog.kill()
        hog.wait()


def test_memory_guard_watches_an_mpi_launcher_for_its_workers():
    guard = MemoryGuard({("worker", 1): 150.0}, poll_s=0.1, mpi_processes_per_replica=2)
    assert guard.watches("master", 0)  # its ranks are charged to the workers
    assert not MemoryGuard({("worker", 1): 150.0}, poll_s=0.1).watches("master", 0)
