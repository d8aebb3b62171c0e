"""jupyter_px.processes.detached: the one way helper processes are started and found again, with real
processes (the child module is `tests/detached_child.py`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from waiting import wait_for

from jupyter_px.processes import detached
from jupyter_px.processes.detached import ProcessIdentity

TESTS = Path(__file__).resolve().parent
CHILD = "detached_child"


def _env() -> dict[str, str]:
    env = detached.importable_environ()
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    return env


def test_a_child_is_itself_from_the_moment_start_returns_and_gone_once_it_ends(tmp_path):
    """The race the follower and the supervisor each fixed once: a child just forked, not yet
    (or still) in exec, has no command line to recognise it by. Its identity is there at once."""
    for _ in range(20):
        with detached.start(CHILD, ["wait"], log_path=tmp_path / "log", env=_env()) as child:
            assert child.identity.alive()
            started = psutil.Process(child.pid).create_time() - psutil.boot_time()  # seconds since boot
            assert child.identity.started_at == pytest.approx(started, abs=1.05)  # (boot_time: whole seconds)
        assert child.wait(60) == 3  # abandoned: its await_go() said no
        assert not child.identity.alive()


def test_go_lets_the_child_run_and_the_starter_reaps_it(tmp_path):
    marker = tmp_path / "ran"
    with detached.start(CHILD, ["touch", str(marker)], log_path=tmp_path / "log", env=_env()) as child:
        assert not marker.exists()  # it waits for go
        child.go()
    assert child.wait(60) == 0 and marker.exists()
    wait_for(lambda: child.exit_code is not None, what="the reaper to collect the child")
    with pytest.raises(psutil.NoSuchProcess):  # reaped: no zombie left behind
        psutil.Process(child.pid)
    assert "JUPYTER_PX_GO_FD" not in (tmp_path / "ran").read_text()  # not passed on to its children


def test_go_to_a_child_that_already_died_is_no_error(tmp_path):
    """A child whose interpreter fails at once (a broken environment, a missing module) has closed
    the pipe before "go": the starter learns it (False) and goes on; the record it wrote names a
    dead process, which a keeper reports with the child's log."""
    with detached.start("jupyter_px_no_such_module", log_path=tmp_path / "log", env=_env()) as child:
        assert child.wait(60) != 0
        assert child.go() is False
    assert "No module named jupyter_px_no_such_module" in (tmp_path / "log").read_text()


def test_the_child_runs_in_a_session_of_its_own(tmp_path):
    with detached.start(CHILD, ["sleep"], log_path=tmp_path / "log", env=_env()) as child:
        child.go()
    try:
        assert os.getsid(child.pid) == child.pid != os.getsid(0)
    finally:
        assert detached.terminate(child.identity, timeout=10)
    assert child.wait(60) == -signal.SIGTERM and not child.identity.alive()


def test_a_pid_with_another_creation_time_is_another_process():
    me = ProcessIdentity.current()
    assert me.alive()
    assert not ProcessIdentity(me.pid, me.started_at - 5).alive()  # pid reused: not us
    assert ProcessIdentity(me.pid, None).alive()  # an older record: the pid alone


def test_a_zombie_is_not_alive():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    identity = ProcessIdentity.of(child.pid)
    wait_for(lambda: psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE, what="a zombie")
    assert not identity.alive()
    child.wait()


def test_a_stop_request_reaches_only_a_child_that_handles_it(tmp_path):
    with detached.start(CHILD, ["handle-term"], log_path=tmp_path / "log", env=_env()) as child:
        # still waiting for go, no handler yet: a SIGTERM would kill it, so none is sent
        assert not detached.request_stop(child.identity)
        child.go()
    wait_for(lambda: "handler installed" in (tmp_path / "log").read_text(), what="the handler")
    assert detached.request_stop(child.identity)
    assert child.wait(60) == 7  # it stopped by itself, as asked
    assert not detached.request_stop(child.identity)  # gone: nothing more to ask


def test_same_as_compares_pid_and_creation_time():
    me = ProcessIdentity.current()
    assert me.same_as(ProcessIdentity.of(me.pid))
    assert not me.same_as(ProcessIdentity(me.pid, me.started_at + 5))
    assert not me.same_as(ProcessIdentity(me.pid + 1, me.started_at))
    assert me.same_as(ProcessIdentity(me.pid, None))  # an older record: the pid alone


def test_an_identity_holds_when_the_wall_clock_moves_the_boot_time(monkeypatch):
    """psutil's creation time is the start since boot plus the boot time as the wall clock says
    it at each call (/proc/stat's btime, whole seconds): an NTP slew across a second moves it by
    one. A live process is still itself then, and an identity recorded by an older version (a
    wall-clock creation time) still matches within that second."""
    me = ProcessIdentity.current()
    older = ProcessIdentity(me.pid, psutil.Process(me.pid).create_time())  # as an older version wrote it
    booted = psutil.boot_time()
    monkeypatch.setattr("psutil._pslinux.boot_time", lambda: booted + 1.0)  # the btime a slew gave
    monkeypatch.setattr("psutil._pslinux.BOOT_TIME", booted + 1.0, raising=False)  # psutil < 7 cached it
    assert psutil.Process(me.pid).create_time() == pytest.approx(older.started_at + 1.0)
    assert me.alive() and ProcessIdentity.current().same_as(me)
    assert older.alive() and older.same_as(me)
    assert not ProcessIdentity(me.pid, older.started_at - 5).alive()  # a reused pid is still told apart
