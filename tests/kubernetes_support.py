"""Helpers for the Kubernetes backend tests: the simulated cluster (tests/kube_sim) wired in through
a kubeconfig, training code that waits for the test, pod statuses as the kubelet reports them (for
unit tests of the pure mapping), waiting on the run store, and the followers' processes.

Waits are deadline-based with a generous bound (`DEADLINE_S`): on a loaded machine starting a
follower alone (a Python process importing the kubernetes client) can take tens of seconds, and
a bound is a failure detector, never a claim about speed.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kube_sim import Cluster
from waiting import wait_for  # (the suite's one wait, re-exported for these tests too)

from jupyter_px.processes import detached

NOW = "2026-11-23T10:00:00Z"
DEADLINE_S = 180.0
FOLLOWER_MODULE = b"jupyter_px.backends.kubernetes.follower"


def running(restarts: int = 0, container: str = "replica") -> dict[str, Any]:
    return {
        "phase": "Running",
        "containerStatuses": [
            {"name": container, "restartCount": restarts, "ready": True, "state": {"running": {"startedAt": NOW}}}
        ],
    }


def terminated(phase: str, exit_code: int, reason: str, container: str = "replica") -> dict[str, Any]:
    return {
        "phase": phase,
        "containerStatuses": [
            {
                "name": container,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": exit_code, "reason": reason, "startedAt": NOW, "finishedAt": NOW}},
            }
        ],
    }


def waiting(reason: str, message: str = "", restarts: int = 0, phase: str = "Pending") -> dict[str, Any]:
    status: dict[str, Any] = {
        "phase": phase,
        "containerStatuses": [
            {"name": "replica", "restartCount": restarts, "state": {"waiting": {"reason": reason, "message": message}}}
        ],
    }
    if restarts:
        status["containerStatuses"][0]["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error"}}
    return status


def unschedulable(message: str) -> dict[str, Any]:
    return {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}],
    }


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def follower_pids(home: Path) -> list[int]:
    """Live follower processes whose argv names a run directory under `home` (a test's store)."""
    roots = {str(home).encode(), str(Path(home).resolve()).encode()}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        named = FOLLOWER_MODULE in argv and any(arg.startswith(root) for arg in argv for root in roots)
        if named and _alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def started_followers() -> list[int]:
    """Live followers this test process started (through `jupyter_px.processes.detached`), by identity:
    one forked a moment ago, still in exec, is counted too (its command line is not read)."""
    return [c.pid for c in detached.children() if FOLLOWER_MODULE.decode() in c.popen.args and c.identity.alive()]


def wait_gone(pid: int, timeout: float = DEADLINE_S) -> int | None:
    """Wait until process `pid` has ended; its exit code when this process started it (through
    `jupyter_px.processes.detached`, whose reaper collects it), else None."""
    started = next((c for c in reversed(detached.children()) if c.pid == pid), None)
    if started is not None:
        try:
            return started.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"process {pid} still runs after {timeout} s") from None
    wait_for(lambda: not _alive(pid), f"process {pid} to end", timeout, poll=0.1)
    return None


def kill(pid: int | None) -> None:
    """SIGKILL `pid` and wait until it is gone (reaped, when it is our child)."""
    if not pid:
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    wait_gone(pid, timeout=30)


def stop_followers(home: Path) -> None:
    """End every follower of a run in `home`: SIGTERM, then SIGKILL if one is still there."""
    pids = follower_pids(home)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for pid in pids:
        try:
            wait_gone(pid, timeout=10)
        except AssertionError:
            kill(pid)


def use_cluster(cluster: Cluster, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point this test's backends at `cluster`: KUBECONFIG, no settings file, every other
    PX_K8S_* variable unset, and followers that give up a minute after the server is gone."""
    monkeypatch.setenv("KUBECONFIG", cluster.kubeconfig(folder / "kubeconfig"))
    monkeypatch.setenv("PX_K8S_CONFIG", str(folder / "no-settings.yaml"))
    monkeypatch.setenv("PX_K8S_IMAGE", "python:3.11-slim")
    for name in list(os.environ):
        if name.startswith("PX_K8S_") and name not in ("PX_K8S_CONFIG", "PX_K8S_IMAGE"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PX_K8S_FOLLOWER_GIVE_UP_S", "60")


def wait_for_file(path: Path) -> str:
    """Python source for training code: block until the test creates `path` (pods share this
    machine's file system outside their volumes), so a test decides when a replica goes on."""
    return f"import os, time\nwhile not os.path.exists({str(path)!r}):\n    time.sleep(0.05)\n"


#: The simulation without its node (no scheduler, no kubelet): the API server and the operators
#: act, pods stay Pending and run no process. For tests about objects only (mark them
#: `pods_stay_pending`), so the lane does not start processes it does not look at.
WITHOUT_NODE = ("gc", "job-controller", "jobset-controller", "training-operator", "trainer")


@pytest.fixture(name="kube")
def kube_fixture(request, tmp_path, monkeypatch, px_home):
    """The simulated cluster (API server, operators, scheduler, a kubelet whose pods are real
    processes), reachable through KUBECONFIG; container restarts back off from 0.5 s. A test
    marked `pods_stay_pending` gets it without scheduler and kubelet (`WITHOUT_NODE`).

    At teardown, while the cluster still answers, every follower of a run in this test's store is
    ended, and the test fails if one is still alive afterwards. Should this teardown never run
    (the test process killed), followers still end by themselves: a minute after the server is
    gone (`PX_K8S_FOLLOWER_GIVE_UP_S`) or when pytest deletes the temporary store."""
    options: dict[str, Any] = {"kubelet": {"backoff_base": 0.5}}
    if request.node.get_closest_marker("pods_stay_pending"):
        options = {"controllers": WITHOUT_NODE}
    with Cluster(namespaces=("default", "ml"), **options) as cluster:
        use_cluster(cluster, tmp_path, monkeypatch)
        try:
            yield cluster
        finally:
            stop_followers(px_home)
    left = follower_pids(px_home)
    assert not left, f"followers of this test's runs outlived it: {left}"
