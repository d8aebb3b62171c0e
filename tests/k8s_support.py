"""Helpers for the Kubernetes backend tests: a fake cluster wired in through a kubeconfig, pod
statuses as the kubelet reports them, and waiting on the run store."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest
from fake_kube import FakeKube

CRDS = (
    "tfjobs.kubeflow.org",
    "pytorchjobs.kubeflow.org",
    "mxjobs.kubeflow.org",
    "mpijobs.kubeflow.org",
    "trainjobs.trainer.kubeflow.org",
)
NOW = "2026-11-23T10:00:00Z"


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


def wait_until(predicate: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def kill(pid: int | None) -> None:
    if not pid:
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.fixture(name="kube")
def kube_fixture(tmp_path, monkeypatch, px_home):
    """A fake cluster with the Kubeflow CRDs, reachable through KUBECONFIG; followers killed after."""
    with FakeKube(namespaces=("default", "ml"), crds=CRDS) as fake:
        monkeypatch.setenv("KUBECONFIG", fake.kubeconfig(tmp_path / "kubeconfig"))
        monkeypatch.setenv("PX_K8S_CONFIG", str(tmp_path / "no-settings.yaml"))
        monkeypatch.setenv("PX_K8S_IMAGE", "python:3.11-slim")
        for name in list(os.environ):
            if name.startswith("PX_K8S_") and name not in ("PX_K8S_CONFIG", "PX_K8S_IMAGE"):
                monkeypatch.delenv(name)
        fake.started_followers = []
        yield fake
        from jupyter_px.runstore import RunStore

        store = RunStore(px_home)
        for run_id in store.run_ids():
            kill(store.status(run_id).supervisor_pid)
