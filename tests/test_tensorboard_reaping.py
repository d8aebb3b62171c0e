"""A TensorBoard started by jupyter-px leaves neither an orphan nor a zombie when the process that
started it dies (a kernel killed under nbclient or papermill, with no Jupyter server to end it).

A harness process stands in for the system's init: a child subreaper (Linux), so the processes
orphaned by the kill come to it, and it records what it has to reap. The starter (a stand-in for
the kernel) starts TensorBoard and is killed with SIGKILL; then the TensorBoard must end by
itself, every process it held (TensorBoard, its data server) must have been waited for by its
watchdog, and the only process handed to the harness is the watchdog itself, which it reaps.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from waiting import wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="child subreapers are Linux's")

STARTER = textwrap.dedent(
    """
    import json, sys, time
    import psutil
    from jupyter_px import tensorboard
    result = tensorboard.start(sys.argv[1], idle_timeout=0)
    assert isinstance(result, tensorboard.Launched), result
    watchdog = psutil.Process(result.info.pid)
    deadline = time.monotonic() + 30
    while not watchdog.children() and time.monotonic() < deadline:
        time.sleep(0.1)
    held = [p.pid for p in watchdog.children(recursive=True)]
    print(json.dumps({"watchdog": result.info.pid, "held": held}), flush=True)
    time.sleep(600)
    """
)

HARNESS = textwrap.dedent(
    """
    import ctypes, json, os, signal, subprocess, sys, time
    import psutil
    assert ctypes.CDLL(None).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER: we play init
    starter = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]], stdout=subprocess.PIPE, text=True)
    started = json.loads(starter.stdout.readline())
    starter.kill()
    starter.wait()
    reaped, deadline = [], time.monotonic() + 60
    while started["watchdog"] not in reaped and time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid:
            reaped.append(pid)
        else:
            time.sleep(0.1)
    time.sleep(1)  # anything orphaned at the very end
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if not pid:
            break
        reaped.append(pid)
    alive = [p for p in [started["watchdog"], *started["held"]] if psutil.pid_exists(p)]
    print(json.dumps({**started, "reaped": reaped, "alive": alive}), flush=True)
    """
)


def test_no_orphan_or_zombie_when_the_starter_is_killed(px_home, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "JUPYTER_PX_SERVER_PID"}  # no Jupyter server
    out = subprocess.run(
        [sys.executable, "-c", HARNESS, STARTER, str(logs)],
        env={**env, "PX_HOME": str(px_home)},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["held"], report  # TensorBoard runs under its watchdog
    # the TensorBoard ended once its starter was gone: no orphan serving on
    assert report["watchdog"] in report["reaped"], report
    # the watchdog waited for what it held: nothing else was orphaned to init, nothing is left
    assert report["reaped"] == [report["watchdog"]], report
    assert report["alive"] == [], report


def _ended(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE  # ended; its reaping is its new parent's
    except psutil.NoSuchProcess:
        return True


def test_a_killed_watchdog_takes_tensorboard_with_it(px_home, tmp_path):
    """SIGKILL leaves the watchdog no time to stop anything: TensorBoard ends by itself (Linux's
    parent-death signal), never serving on with nobody to stop it."""
    import psutil

    from jupyter_px import tensorboard

    logs = tmp_path / "logs"
    logs.mkdir()
    result = tensorboard.start(str(logs))
    assert isinstance(result, tensorboard.Launched), result
    watchdog = psutil.Process(result.info.pid)
    held = watchdog.children(recursive=True)
    assert held
    watchdog.kill()
    watchdog.wait(10)
    wait_for(
        lambda: all(_ended(process.pid) for process in held), f"TensorBoard's processes {held} to end", 30, poll=0.1
    )
    assert tensorboard.list_servers() == []
