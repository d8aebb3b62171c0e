"""A hung supervisor (SIGSTOP, a deadlock) leaves no run Running for ever: reads say it has not
reported, the keeper ends the run Lost, and a stop ends it without the supervisor's help, its
replicas still given the grace to write what they hold. Real local runs; the silence bound is
lowered to a few seconds through its setting (PX_SUPERVISOR_SILENT_S) for the processes that read."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from local_support import describe, outputs, submit, wait, wait_for
from px_cli import CLI

pytestmark = pytest.mark.jobs

SILENT_S = "4"


@pytest.fixture
def short_silence(monkeypatch):
    import jupyter_px.backends.local.backend as local_backend

    monkeypatch.setattr(local_backend, "HUNG_AFTER_S", float(SILENT_S))
    monkeypatch.setenv("PX_SUPERVISOR_SILENT_S", SILENT_S)


def _stopped_supervisor(run) -> int:
    wait_for(lambda: run.status().state.value == "Running", timeout=120, what="the run to start")
    pid = run.status().owner.pid
    os.kill(pid, signal.SIGSTOP)
    return pid


def test_reads_report_a_silent_supervisor_and_the_keeper_ends_the_run(px_home, tmp_path, short_silence):
    from jupyter_px.service import RunService

    done = tmp_path / "finish"
    run = submit("faults.py", {"framework": "pytorch"}, args=["fail-when", "master-0", str(done)])
    pid = _stopped_supervisor(run)
    try:
        done.touch()  # the master exits; nobody reaps it
        service = RunService()
        problem = wait_for(
            lambda: service.observe(run.run_id).owner_problem, timeout=30, what="reads to see the silence"
        )
        assert f"the supervisor (pid {pid}) has not reported for" in problem and "SIGSTOP" in problem, problem
        shown = subprocess.run([*CLI, "status", run.run_id], capture_output=True, text=True, timeout=60)
        assert "has not reported for" in shown.stdout + shown.stderr, shown
        assert service.status(run.run_id).state.value == "Running"  # a read never acts
        status = service.keep(run.run_id)  # the keeper does
        assert status.state.value == "Lost", describe(run)
        assert "has not reported for" in status.message and "killed" in status.message, status.message
        wait(run)  # nothing of the run is left, the supervisor included
        assert not _alive(pid)
    finally:
        _kill(pid)


def test_stop_ends_a_run_whose_supervisor_hangs_and_keeps_what_tracking_held(px_home, short_silence):
    """`jupyter px stop` (what the sidebar's Stop calls too) and `--force`: Stopped, every
    point the replicas had logged written, nothing left."""
    run = submit("burst.py", {"framework": "pytorch", "environment": {"replicas": {"n_workers": 1}}}, args=["20000"])
    wait_for(lambda: len(outputs(run)) == 2, timeout=120, what="both replicas to log their burst")
    pid = _stopped_supervisor(run)
    try:
        stopped = subprocess.run([*CLI, "stop", "--force", run.run_id], capture_output=True, text=True, timeout=120)
        assert stopped.returncode == 0, stopped.stderr
        status = run.status()
        assert (status.state.value, status.reason) == ("Stopped", "StoppedByUser"), describe(run)
        assert "stopped without its supervisor" in status.message
        wait(run)
        assert not _alive(pid)
        paths = run.paths
        for key in ("master-0", "worker-0"):
            role, index = key.split("-")
            lines = paths.metrics(role, int(index)).read_text().splitlines()
            assert [json.loads(line)["step"] for line in lines] == list(range(20000)), key
    finally:
        _kill(pid)


def test_a_plain_stop_on_a_silent_supervisor_does_not_wait_for_it(px_home, tmp_path, short_silence):
    run = submit("faults.py", {"framework": "pytorch", "environment": {"replicas": {"n_workers": 1}}}, args=["sleep"])
    wait_for(lambda: len(outputs(run)) == 2, timeout=120, what="every replica to start")
    pid = _stopped_supervisor(run)
    try:
        time.sleep(float(SILENT_S) + 1)
        stopped = subprocess.run([*CLI, "stop", run.run_id], capture_output=True, text=True, timeout=120)
        assert stopped.returncode == 0, stopped.stderr
        assert run.status().state.value == "Stopped", describe(run)
        wait(run)
    finally:
        _kill(pid)


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
