"""Failures, restarts, stops and a dying supervisor on the local backend.

After each, the status must say exactly what happened and no process of the run may be left:
neither a recorded pid nor anything carrying the run's PX_RUN_ID (grandchildren included).
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import psutil
import pytest
from local_support import (
    describe,
    outputs,
    replica,
    run_processes,
    submit,
    supervisor_and_watchdog,
    wait,
    wait_for,
)

from jupyter_px.backends.local.watchdog import SCAN_S

#: Each real job runs twice, cold and warm (`launch`, tests/conftest.py).
pytestmark = [pytest.mark.jobs, pytest.mark.usefixtures("launch")]


def _topology(n_workers: int = 2, **worker_settings) -> dict:
    replicas: dict[str, Any] = {"n_workers": n_workers}
    if worker_settings:
        replicas["default_worker"] = worker_settings
    return {"framework": "pytorch", "environment": {"replicas": replicas}}


def _assert_others_stopped_by_the_failure(status, failed_key: str) -> None:
    """Every other replica was running when `failed_key` failed, and ended after it, stopped by
    the run (an ordering fact, not a duration: a loaded machine may take any time to stop them)."""
    failed = replica(status, failed_key)
    for other in status.replicas:
        if other.key == failed_key:
            continue
        assert (other.state.value, other.reason) == ("Stopped", "StoppedByRun"), other
        assert f"stopped because {failed_key} failed" in other.message
        assert other.started_at < failed.finished_at <= other.finished_at, (other.key, other, failed)
        assert other.exit_code is not None  # it had a process, which was stopped (not "never started")


def test_worker_exit_code_fails_the_run_and_stops_the_others(px_home):
    run = submit("faults.py", _topology(), args=["exit", "worker-1", "3"])
    status = wait(run)
    assert status.state.value == "Failed", describe(run)
    assert status.reason == "ReplicaFailed" and "worker-1 failed (Error): exited with code 3" in status.message
    failed = replica(status, "worker-1")
    assert (failed.state.value, failed.exit_code, failed.signal, failed.reason) == ("Failed", 3, None, "Error")
    _assert_others_stopped_by_the_failure(status, "worker-1")


def test_worker_killed_by_sigkill_is_recorded_as_signaled(px_home):
    run = submit("faults.py", _topology(), args=["sigkill", "worker-0"])
    status = wait(run)
    assert status.state.value == "Failed", describe(run)
    killed = replica(status, "worker-0")
    assert (killed.state.value, killed.signal, killed.exit_code, killed.reason) == (
        "Failed",
        "SIGKILL",
        137,
        "Signaled",
    )
    assert killed.message == "killed by SIGKILL"
    _assert_others_stopped_by_the_failure(status, "worker-0")


def test_replica_over_its_memory_limit_is_oomkilled(px_home):
    topology = {
        "framework": "pytorch",
        "environment": {
            "replicas": {
                "n_workers": 1,
                "worker": [{"index": 0, "resources": {"memory": {"requests": 64, "limits": 120}}}],
            }
        },
    }
    run = submit("faults.py", topology, args=["oom", "worker-0"])
    status = wait(run)
    assert status.state.value == "Failed", describe(run)
    oom = replica(status, "worker-0")
    assert (oom.state.value, oom.reason, oom.signal) == ("Failed", "OOMKilled", "SIGKILL"), describe(run)
    assert "above its memory limit of 120 MiB" in oom.message
    assert "OOMKilled" in status.message
    _assert_others_stopped_by_the_failure(status, "worker-0")


def test_on_failure_restarts_up_to_max_restarts_then_fails(px_home):
    run = submit(
        "faults.py", _topology(1, restart_policy="OnFailure", max_restarts=2), args=["flaky", "worker-0", "99"]
    )
    status = wait(run)
    assert status.state.value == "Failed", describe(run)
    flaky = replica(status, "worker-0")
    assert (flaky.state.value, flaky.restarts, flaky.exit_code, flaky.reason) == ("Failed", 2, 5, "Error")
    assert "after 2 restarts" in flaky.message
    assert sorted(k for k in outputs(run) if k.startswith("attempt")) == [
        "attempt-worker-0-0",
        "attempt-worker-0-1",
        "attempt-worker-0-2",
    ]
    log = run.logs("worker", 0)
    assert (
        log.index("attempt 0")
        < log.index("--- restart 1 ---")
        < log.index("attempt 1")
        < log.index("--- restart 2 ---")
        < log.index("attempt 2")
    )  # one log, appended across restarts


def test_on_failure_restart_that_then_succeeds(px_home):
    run = submit("faults.py", _topology(1, restart_policy="OnFailure", max_restarts=2), args=["flaky", "worker-0", "1"])
    status = wait(run)
    assert status.state.value == "Succeeded", describe(run)
    worker = replica(status, "worker-0")
    assert (worker.state.value, worker.restarts, worker.exit_code) == ("Succeeded", 1, 0)
    assert outputs(run)["succeeded"] == {"attempt": 1}


def test_stop_while_running(px_home):
    from jupyter_px.api import Run

    run = submit("faults.py", _topology(2), args=["sleep"])
    seen = wait_for(lambda: len(outputs(run)) == 3 and outputs(run), what="every replica to start its grandchildren")
    grandchildren = [pid for data in seen.values() for pid in data["children"]]
    first = run.status()
    assert first.state.value == "Running"
    wait_for(lambda: run.status().updated_at > first.updated_at, timeout=10, what="a heartbeat")
    status = Run(run.run_id).stop()
    assert status.state.value == "Stopped" and status.reason == "StoppedByUser", describe(run)
    for entry in status.replicas:
        assert (entry.state.value, entry.reason) == ("Stopped", "StoppedByUser")
    wait(run)
    for pid in grandchildren:  # both the one in the replica's group and the one that left it
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_two_runs_at_once_get_distinct_ports(px_home, tmp_path):
    """Two runs whose 8 replicas all hold their ports at the same moment (a barrier across both
    runs), so the reservations really overlapped: every port distinct, as recorded."""
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    topology = _topology(3)
    first = submit("faults.py", topology, args=["ports", str(barrier), "8"])
    second = submit("faults.py", topology, args=["ports", str(barrier), "8"])
    statuses = [wait(first), wait(second)]
    assert [s.state.value for s in statuses] == ["Succeeded", "Succeeded"], describe(first) + describe(second)
    seen = [data for run in (first, second) for data in outputs(run).values()]
    assert all(len(data["saw"]) == 8 for data in seen)  # each saw all 8 replicas holding their ports
    ports = [data["port"] for data in seen]
    assert len(ports) == 8 and len(set(ports)) == 8
    recorded = [int(r.address.rsplit(":", 1)[1]) for s in statuses for r in s.replicas]
    assert sorted(recorded) == sorted(ports)
    replicas = [r for s in statuses for r in s.replicas]
    assert max(r.started_at for r in replicas) < min(r.finished_at for r in replicas)  # all alive at once
    assert statuses[0].started_at < statuses[1].finished_at and statuses[1].started_at < statuses[0].finished_at


def test_supervisor_killed_leaves_nothing_and_run_reads_lost(px_home):
    run = submit("faults.py", _topology(2), args=["sleep"])
    wait_for(lambda: len(outputs(run)) == 3, what="every replica to start")
    supervisor, _ = supervisor_and_watchdog(run)
    os.kill(supervisor.pid, signal.SIGKILL)
    status = wait_for(lambda: (s := run.status()).state.finished and s, what="the run to be marked")
    assert status.state.value == "Lost" and status.reason == "SupervisorLost", describe(run)
    assert f"supervisor (pid {supervisor.pid}) died" in status.message
    assert all(r.state.value == "Lost" for r in status.replicas)
    wait_for(lambda: not run_processes(run.run_id), timeout=20, what="every process of the run to be gone")
    wait(run)


def test_supervisor_and_watchdog_killed_status_reads_reconcile_writes(px_home):
    """With the watchdog gone too: status() is a pure read (the run still reads Running, its
    status.json is unchanged, the leftover grandchild lives on); reconcile() finds the supervisor
    dead, kills the leftovers and records Lost."""
    run = submit("faults.py", _topology(1), args=["sleep"])
    seen = wait_for(lambda: len(outputs(run)) == 2 and outputs(run), what="every replica to start")
    supervisor, watchdog = supervisor_and_watchdog(run)
    assert len(watchdog) == 1
    os.kill(watchdog[0].pid, signal.SIGKILL)
    os.kill(supervisor.pid, signal.SIGKILL)
    wait_for(lambda: not supervisor.is_running() or supervisor.status() == psutil.STATUS_ZOMBIE, what="the kill")
    escaped = [pid for data in seen.values() for pid in data["children"][1:]]  # the new-session ones
    assert escaped and all(psutil.pid_exists(pid) for pid in escaped)
    stored = run.paths.status.read_bytes()
    stat = run.paths.status.stat()
    for _ in range(3):
        assert run.status().state.value == "Running"
        assert (
            repr(run)
            == f"<Run {run.run_id} Running; the supervisor (pid {supervisor.pid}) is gone while the run was Running>"
        )
    assert run.paths.status.read_bytes() == stored and run.paths.status.stat().st_mtime_ns == stat.st_mtime_ns
    assert all(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in escaped)

    status = run.reconcile()
    assert status.state.value == "Lost" and "is gone" in status.message, describe(run)
    assert run.status().state.value == "Lost"  # written
    wait_for(lambda: not run_processes(run.run_id), timeout=20, what="every process of the run to be gone")
    wait(run)


def test_daemon_that_left_with_an_empty_environment_does_not_outlive_the_run(px_home):
    """setsid + double fork + execve(/bin/sleep, env={}): no PX_RUN_ID, not in any replica's
    group; the supervisor adopted it (child subreaper) and kills it when the run ends."""
    run = submit("faults.py", _topology(1), args=["escape", "master-0"])
    status = wait(run)
    assert status.state.value == "Succeeded", describe(run)
    daemon = outputs(run)["escaped"]["pid"]

    def gone() -> bool:
        try:
            proc = psutil.Process(daemon)
            return proc.status() == psutil.STATUS_ZOMBIE or proc.name() != "sleep"
        except psutil.NoSuchProcess:
            return True

    try:
        assert gone(), f"the daemon {daemon} outlived run {run.run_id}\n{describe(run)}"
    finally:
        if not gone():
            os.kill(daemon, signal.SIGKILL)
    assert f"killing adopted process {daemon}" in (run.paths.root / "supervisor.log").read_text()


def test_workers_still_running_after_success_get_a_grace_then_stop(px_home, monkeypatch):
    monkeypatch.setenv("PX_COMPLETION_GRACE_S", "0.5")
    run = submit("faults.py", _topology(1), args=["exit", "master-0", "0"])
    status = wait(run)
    assert status.state.value == "Succeeded" and status.message == "master-0 succeeded", describe(run)
    worker = replica(status, "worker-0")
    assert (worker.state.value, worker.reason) == ("Succeeded", "StoppedByRun")
    assert "0.5 s after the run succeeded" in worker.message


@pytest.mark.parametrize("action, restarts", [(["sigkill", "worker-0"], 1), (["exit", "worker-0", "3"], 0)])
def test_exit_code_policy_restarts_only_retryable_exits(px_home, action, restarts):
    """Kubeflow's ExitCode policy: 130/137/143 (signals) are retried, 1-127 (the code's own) are not."""
    run = submit("faults.py", _topology(1, restart_policy="ExitCode", max_restarts=1), args=action)
    status = wait(run)
    assert status.state.value == "Failed", describe(run)
    assert replica(status, "worker-0").restarts == restarts


def test_workers_only_run_succeeds_when_every_worker_does(px_home):
    topology = {"framework": "pytorch", "environment": {"replicas": {"n_masters": 0, "n_workers": 2}}}
    run = submit("faults.py", topology, args=["env"])
    status = wait(run)
    assert status.state.value == "Succeeded" and status.message == "all 2 workers succeeded", describe(run)
    assert outputs(run)["worker-0"]["env"]["RANK"] == "0"  # no master: worker 0 is rank 0


@pytest.mark.cold_only  # mpirun: a warm round starts it cold too (test_warm checks the reason)
def test_mpi_rank_over_its_workers_memory_limit_fails_that_worker(px_home):
    topology = {
        "framework": "mpi",
        "environment": {"replicas": {"n_workers": 3, "default_worker": {"resources": {"memory": {"limits": 150}}}}},
    }
    run = submit("faults.py", topology, args=["oom", "worker-1"])  # rank 1 takes on worker-1's identity
    status = wait(run)
    assert status.state.value == "Failed", describe(run)
    worker = replica(status, "worker-1")
    assert (worker.state.value, worker.reason) == ("Failed", "OOMKilled"), describe(run)
    assert "MPI rank 1 (worker-1) used" in worker.message and "limit of 150 MiB" in worker.message
    assert status.message.startswith("worker-1 failed (OOMKilled)")


NESTED = """\
import os, pathlib
if os.environ["PX_TASK_TYPE"] == "master":
    import jupyter_px
    inner = jupyter_px.submit("import time; time.sleep(4)\\n", {"framework": "pytorch"})
    pathlib.Path(os.environ["PX_OUTPUTS_PATH"], "inner").write_text(inner.run_id)
"""


def test_a_run_submitted_from_a_replica_keeps_its_supervisor_when_the_outer_run_ends(px_home):
    """The inner run's supervisor outlives the replica that started it, so the outer supervisor
    adopts it; ending the outer run must not kill it (it is the recorded owner of its own run),
    while a stray the replica left behind would be killed."""
    import jupyter_px

    outer = jupyter_px.submit(NESTED, _topology(1))
    status = wait(outer)
    assert status.state.value == "Succeeded", describe(outer)
    inner = jupyter_px.Run((outer.paths.outputs_dir / "inner").read_text())
    inner_status = inner.wait(timeout=120, poll=0.1)
    assert inner_status.state.value == "Succeeded", describe(inner)


def _why_no_cgroups() -> str | None:
    """Why this machine gives a run no cgroup v2 of its own (the test's own probe), or None."""
    with open("/proc/self/mounts") as mounts:
        mount = next((f[1] for f in map(str.split, mounts) if f[2] == "cgroup2"), None)
    with open("/proc/self/cgroup") as cgroups:
        own = next((line[3:].strip() for line in cgroups if line.startswith("0::")), None)
    if mount is None or own is None:
        return "no cgroup v2 hierarchy is mounted"
    probe = os.path.join(mount, own.lstrip("/"), f"px-test-probe-{os.getpid()}")
    try:
        os.mkdir(probe)
    except OSError as error:
        return f"cannot create a cgroup under {os.path.dirname(probe)}: {error.strerror}"
    os.rmdir(probe)
    return None


def _escaped(run) -> int | None:
    """The pid the target's escaped process recorded; AssertionError saying how the run ended
    when it ended before (nothing to wait for)."""
    finished = run.status().state.finished  # read first: a record written before the end counts
    pid = outputs(run).get("escaped", {}).get("pid")
    if pid is None and finished:
        raise AssertionError(f"the run ended before its process escaped: {describe(run)}")
    return pid


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.parametrize("cgroups", ["cgroups", "no cgroups"])
def test_a_grandchild_in_its_own_session_counts_against_its_replicas_memory_limit(
    px_home, launch, cgroups, monkeypatch
):
    """A double-forked grandchild (setsid: another session and group) holding 700 MiB under a
    300 MiB limit fails its replica as OOMKilled and is killed, warm and cold."""
    if cgroups == "no cgroups":
        monkeypatch.setenv("PX_RUN_CGROUPS", "0")
    run = submit("faults.py", _topology(1, resources={"memory": {"limits": 300}}), args=["hog", "worker-0"])
    hog = wait_for(lambda: _escaped(run), what="the grandchild to start")
    try:
        status = run.wait(timeout=300, poll=0.1)
        assert status.state.value == "Failed", describe(run)
        worker = replica(status, "worker-0")
        assert (worker.state.value, worker.reason) == ("Failed", "OOMKilled"), describe(run)
        assert "limit of 300 MiB" in worker.message
        assert _gone(hog), f"the grandchild {hog} outlived its run"
    finally:
        if not _gone(hog):
            os.kill(hog, signal.SIGKILL)


@pytest.mark.parametrize("cgroups", ["cgroups", "no cgroups"])
def test_a_daemon_with_an_emptied_environment_dies_with_a_sigkilled_supervisor(px_home, cgroups, monkeypatch):
    """setsid + double fork + execve(env={}) while the run goes on, then the supervisor is
    SIGKILLed: the daemon has no PX_RUN_ID and its adopter is gone. The run's cgroup finds it;
    without one (PX_RUN_CGROUPS=0, as where cgroup v2 is not writable), the watchdog's record of
    the supervisor's descendants does (its replica, a child subreaper, held it in the tree)."""
    if cgroups == "cgroups" and (reason := _why_no_cgroups()) is not None:
        pytest.skip(f"run cgroups are not available here ({reason})")
    if cgroups == "no cgroups":
        monkeypatch.setenv("PX_RUN_CGROUPS", "0")
    run = submit("faults.py", _topology(1), args=["escape", "worker-0"])
    daemon = wait_for(lambda: _escaped(run), what="the daemon to start")
    proc = psutil.Process(daemon)
    # The pipe's EOF comes when execve closes its close-on-exec files; the new name and the
    # environment are set a moment later, in the same execve.
    wait_for(lambda: proc.name() == "sleep" and proc.environ() == {}, timeout=10, what="the daemon's execve")
    time.sleep(4 * SCAN_S)  # the watchdog has looked at the supervisor's descendants since
    supervisor, _ = supervisor_and_watchdog(run)
    os.kill(supervisor.pid, signal.SIGKILL)
    try:
        status = wait_for(lambda: (s := run.status()).state.finished and s, what="the run marked")
        assert status.state.value == "Lost", describe(run)
        wait_for(
            lambda: not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE,
            timeout=20,
            what=f"the daemon {daemon} to be killed",
        )
    finally:
        if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
            proc.kill()
    wait(run)
