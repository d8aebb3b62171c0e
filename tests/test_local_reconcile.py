"""Reading, reconciling and starting local runs when things go wrong: a full disk, a supervisor
that cannot start, a submitter that died, a stop right after submit.

The full disk is real: a 4 MiB tmpfs mounted as PX_HOME and filled to the last byte, so every
write in the run directory fails with ENOSPC, as it would on a full home directory.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from local_support import describe, replica, submit, wait, wait_for

from jupyter_px.backends.local import LocalBackend
from jupyter_px.processes.detached import ProcessIdentity
from jupyter_px.runstore import ReplicaState, ReplicaStatus, RunRecord, RunState, RunStatus, RunStore
from jupyter_px.runstore.models import RunOwner

#: Each real job runs twice, cold and warm (`launch`, tests/conftest.py).
pytestmark = [pytest.mark.usefixtures("launch")]

ONE_WORKER = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 1}}}


@pytest.fixture
def small_disk(tmp_path, monkeypatch) -> Iterator[Path]:
    """A 4 MiB tmpfs as PX_HOME (mounting needs root; without it these tests cannot make a disk full)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill here: {result.stderr.strip() or result.returncode}")
    monkeypatch.setenv("PX_HOME", str(mount))
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    """Write until not one more byte fits; returns the file to delete to free the disk."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (2**20, 2**16, 4096, 1):
            while True:
                try:
                    os.write(fd, b"\0" * size)
                except OSError as error:
                    assert error.errno == errno.ENOSPC
                    break
    finally:
        os.close(fd)
    with pytest.raises(OSError) as full:
        (disk / "probe").write_bytes(b"x")
    assert full.value.errno == errno.ENOSPC
    return filler


def _ghost_run(store: RunStore, run_id: str = "ghost-run", owner: RunOwner | None = None) -> int:
    """A run that claims to be Running under a supervisor that is dead (or under `owner`)."""
    store.create(RunRecord(run_id=run_id, topology={}, submitted_from="test"), {"main.py": "pass\n"})
    dead = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    created = psutil.Process(dead.pid).create_time()
    dead.kill()
    dead.wait()
    store.write_status(
        RunStatus(
            run_id=run_id,
            state=RunState.RUNNING,
            owner=owner or RunOwner(kind="supervisor", pid=dead.pid, started_at=created),
            replicas=[ReplicaStatus(role="master", index=0, state=ReplicaState.RUNNING, pid=dead.pid, reason=None)],
        )
    )
    return dead.pid


def test_observe_reports_a_gone_supervisor_and_changes_nothing_reconcile_makes_lost(px_home):
    store = RunStore()
    pid = _ghost_run(store)
    backend = LocalBackend(store)
    status_file = store.paths("ghost-run").root / "status.json"
    before = status_file.read_bytes()
    assert backend.status("ghost-run").state.value == "Running"  # a pure read: nothing checked
    seen = backend.observe("ghost-run")
    assert seen.status.state.value == "Running"
    assert seen.owner_problem == f"the supervisor (pid {pid}) is gone while the run was Running"
    assert status_file.read_bytes() == before  # observed, not repaired
    status = backend.reconcile("ghost-run")
    assert status.state.value == "Lost" and status.reason == "SupervisorLost"
    assert f"pid {pid}" in (status.message or "")
    assert status.replicas[0].state.value == "Lost" and status.finished_at
    assert store.status("ghost-run").state.value == "Lost"  # written, not only returned


def test_reconcile_on_a_full_disk_returns_lost_without_writing_then_writes_it(small_disk):
    store = RunStore()
    _ghost_run(store)
    filler = fill(small_disk)
    status = LocalBackend(store).reconcile("ghost-run")  # must not raise ENOSPC
    assert status.state.value == "Lost" and status.replicas[0].state.value == "Lost"
    assert store.status("ghost-run").state.value == "Running"  # it could not be written
    filler.unlink()
    assert LocalBackend(store).reconcile("ghost-run").state.value == "Lost"
    assert store.status("ghost-run").state.value == "Lost"


@pytest.mark.jobs
def test_the_keeper_keeps_a_live_run_when_the_wall_clock_moves_the_boot_time(px_home, tmp_path, monkeypatch):
    """psutil's creation times move by a second when an NTP slew moves /proc/stat's btime (whole
    seconds of wall clock minus uptime). The keeper once took the live supervisor for gone then,
    recorded the run Lost and killed its replicas' cgroup: every replica SIGKILLed at once."""
    go = tmp_path / "go"
    run = submit("faults.py", ONE_WORKER, args=["fail-when", "worker-0", str(go)])
    wait_for(lambda: (s := run.status()).state.value == "Running" and all(r.pid for r in s.replicas), what="Running")
    booted = psutil.boot_time()
    monkeypatch.setattr("psutil._pslinux.boot_time", lambda: booted + 1.0)  # the btime after a slew
    monkeypatch.setattr("psutil._pslinux.BOOT_TIME", booted + 1.0, raising=False)  # psutil < 7 cached it
    assert run.reconcile().state.value == "Running", describe(run)
    assert run.status().state.value == "Running" and all(psutil.pid_exists(r.pid) for r in run.status().replicas)
    go.touch()  # worker-0 fails on its own: the run ends as it would have
    status = wait(run)
    worker = replica(status, "worker-0")
    assert (status.state.value, worker.exit_code, worker.reason) == ("Failed", 1, "Error"), describe(run)


@pytest.mark.jobs
def test_replica_failing_while_the_disk_is_full_is_recorded_failed_once_space_returns(small_disk, tmp_path):
    go = tmp_path / "go"
    run = submit("faults.py", ONE_WORKER, args=["fail-when", "worker-0", str(go)])
    running = wait_for(
        lambda: (s := run.status()).state.value == "Running" and all(r.pid for r in s.replicas) and s,
        what="the run to be running",
    )
    pids = [r.pid for r in running.replicas]
    # master-0 prints one line, then waits to be stopped: it must have printed before the disk fills
    wait_for(lambda: "master-0: waiting" in run.logs("master", 0), what="master-0 to be waiting")
    filler = fill(small_disk)
    go.touch()
    # worker-0 exits 1, the run is decided Failed and master-0 stopped, all while no status can be written
    wait_for(lambda: not any(psutil.pid_exists(p) for p in pids), timeout=60, what="both replicas to end")
    supervisor = running.owner
    assert supervisor is not None and supervisor.kind == "supervisor"
    # The run is decided and its replicas are gone: the supervisor's only sleep now is between
    # attempts at its final status write (its event loop waits in select, not in a sleep). One
    # that gave up on the first ENOSPC would have exited instead, and this would time out.
    wait_for(
        lambda: Path(f"/proc/{supervisor.pid}/wchan").read_text() == "hrtimer_nanosleep",
        timeout=60,
        what="the supervisor to retry its final status write",
    )
    assert ProcessIdentity(supervisor.pid, supervisor.started_at).alive()  # the very process recorded
    assert run.reconcile().state.value == "Running"  # the supervisor lives: not Lost, and no crash
    assert run.status().state.value == "Running"
    filler.unlink()
    status = wait(run)
    assert status.state.value == "Failed", describe(run)
    worker = replica(status, "worker-0")
    assert (worker.state.value, worker.exit_code, worker.reason) == ("Failed", 1, "Error"), describe(run)
    assert (replica(status, "master-0").state.value, status.reason) == ("Stopped", "ReplicaFailed")


@pytest.mark.jobs
def test_submit_returns_pending_with_the_supervisor_pid_and_a_stop_right_after_is_a_stop(px_home):
    run = submit("faults.py", ONE_WORKER, args=["sleep"])
    first = run.status()
    assert first.state.value in ("Pending", "Running") and first.owner and first.owner.kind == "supervisor"
    assert [r.key for r in first.replicas] == ["master-0", "worker-0"]
    status = run.stop()  # the supervisor may still be starting: it must not be killed by the stop
    assert (status.state.value, status.reason) == ("Stopped", "StoppedByUser"), describe(run)
    wait(run)


@pytest.mark.jobs
@pytest.mark.cold_only  # its supervisor starts with its own TMPDIR: a fresh process's
def test_a_supervisor_that_cannot_set_the_run_up_records_failed_with_the_reason(px_home, tmp_path, monkeypatch):
    # the supervisor's temporary folder holds a port lock folder that others can write to
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    shared = tmp_path / f"jupyter-px-{os.getuid()}"
    shared.mkdir()
    shared.chmod(0o777)
    run = submit("faults.py", ONE_WORKER, args=["env"])
    status = wait(run)
    assert (status.state.value, status.reason) == ("Failed", "SupervisorError"), describe(run)
    assert "the local supervisor failed" in status.message and "not this user's alone" in status.message
    assert all(r.state.value == "Stopped" for r in status.replicas)


@pytest.mark.jobs
@pytest.mark.cold_only  # an interpreter that cannot start is a cold start's; a failed warm start starts cold
def test_a_supervisor_that_cannot_even_start_is_found_by_reconcile(px_home, monkeypatch):
    monkeypatch.setenv("PYTHONHOME", "/nonexistent-python-home")  # the supervisor's interpreter dies at once
    run = submit("faults.py", ONE_WORKER, args=["env"])
    monkeypatch.delenv("PYTHONHOME")
    assert run.status().state.value == "Pending" and run.status().owner
    status = run.wait(timeout=60, poll=0.1)  # wait() reconciles
    assert (status.state.value, status.reason) == ("Lost", "SupervisorLost"), describe(run)
    assert "is gone while the run was Pending" in status.message
    assert "Fatal Python error" in status.message  # the tail of supervisor.log says why


def test_a_run_whose_submitter_died_before_starting_it_becomes_lost(px_home):
    store = RunStore()
    store.create(
        RunRecord(run_id="orphan-old", topology={}, created_at=time.time() - 3600, submitted_from="test"),
        {"main.py": "pass\n"},
    )
    store.create(RunRecord(run_id="orphan-new", topology={}, submitted_from="test"), {"main.py": "pass\n"})
    backend = LocalBackend(store)
    old = backend.reconcile("orphan-old")
    assert (old.state.value, old.reason) == ("Lost", "SupervisorLost") and "never started" in (old.message or "")
    assert backend.reconcile("orphan-new").state.value == "Pending"  # may be being submitted right now


def test_a_live_pid_with_another_creation_time_is_not_the_supervisor(px_home):
    """A pid is reused: a live process with the recorded pid but created at another time is some
    later process, and the run's supervisor is gone."""
    store = RunStore()
    me = psutil.Process()
    _ghost_run(store, owner=RunOwner(kind="supervisor", pid=me.pid, started_at=me.create_time() - 10))
    problem = LocalBackend(store).observe("ghost-run").owner_problem
    assert problem == f"the supervisor (pid {me.pid}) is gone while the run was Running"


def test_a_live_supervisor_is_no_problem(px_home):
    store = RunStore()
    me = psutil.Process()
    _ghost_run(store, owner=RunOwner(kind="supervisor", pid=me.pid, started_at=me.create_time()))
    assert LocalBackend(store).observe("ghost-run").owner_problem is None
    assert LocalBackend(store).reconcile("ghost-run").state.value == "Running"


def test_an_older_status_names_its_owner_supervisor_pid(px_home):
    """status.json written before owners had a kind and a creation time: `supervisor_pid`."""
    store = RunStore()
    store.create(RunRecord(run_id="old-run", topology={}, submitted_from="test"), {"main.py": "pass\n"})
    path = store.paths("old-run").root / "status.json"
    path.write_text('{"run_id": "old-run", "state": "Running", "supervisor_pid": 4242, "replicas": []}')
    assert store.status("old-run").owner == RunOwner(kind=None, pid=4242, started_at=None)
    path.write_text('{"run_id": "old-run", "state": "Succeeded", "supervisor_pid": null, "replicas": []}')
    assert store.status("old-run").owner is None


def test_a_run_of_another_host_is_judged_by_its_heartbeat(px_home):
    """Its supervisor's pid means nothing here: only a status left unrefreshed for long says it is gone."""
    store = RunStore()
    store.create(RunRecord(run_id="far-run", topology={}, host="another-machine", submitted_from="test"), {})
    owner = RunOwner(kind="supervisor", pid=1, started_at=0.0)  # no such process here, and no matter
    store.write_status(RunStatus(run_id="far-run", state=RunState.RUNNING, owner=owner))
    assert LocalBackend(store).observe("far-run").owner_problem is None  # a fresh heartbeat
    path = store.paths("far-run").root / "status.json"
    stale = json.loads(path.read_text()) | {"updated_at": time.time() - 3600}
    path.write_text(json.dumps(stale))
    problem = LocalBackend(store).observe("far-run").owner_problem
    assert problem.startswith("the supervisor (pid 1) is gone while the run was Running (it ran on another host")
    assert store.status("far-run").state.value == "Running"  # reported, not acted on
