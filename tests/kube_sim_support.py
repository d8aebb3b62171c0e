"""What the simulated cluster's tests share: a deadline, waiting on a condition, a namespace of
their own per test, and the official client pointed at the simulation."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kube_sim import Cluster
from kubernetes import client, config
from waiting import wait_for  # noqa: F401 (the suite's one wait, re-exported for these tests)

#: Generous: pods are real processes on a shared, loaded machine.
DEADLINE_S = 120.0
_NAMESPACES = itertools.count()


def fresh_namespace(cluster: Cluster, test_name: str, prefix: str) -> str:
    """A namespace named after the test (unique within the session), so tests of one module-scoped
    cluster do not see each other's objects."""
    tail = re.sub(r"[^a-z0-9]+", "-", test_name.lower())[5:50].strip("-")  # most keep their [param]
    name = f"{prefix}{next(_NAMESPACES)}-{tail}"
    cluster.api.create(cluster.api.resource("", "v1", "namespaces"), {"metadata": {"name": name}})
    return name


def core_api(cluster: Cluster, folder: Path) -> Iterator[client.CoreV1Api]:
    """The official CoreV1Api over HTTP to the simulation (its kubeconfig written in `folder`)."""
    api_client = config.new_client_from_config(cluster.kubeconfig(folder / "kubeconfig"))
    try:
        yield client.CoreV1Api(api_client)
    finally:
        api_client.close()


@contextlib.contextmanager
def backend_cluster(tmp_path: Path, monkeypatch, px_home: Path, **options: Any) -> Iterator[Cluster]:
    """The simulated cluster for the backends: KUBECONFIG pointing at it, no settings file, no
    PX_K8S_* from the caller's environment (but `python:3.11-slim` as the image), and every
    follower of `px_home` ended afterwards. Skips where pods cannot have their own names."""
    import pytest
    from kubernetes_support import stop_followers, use_cluster

    options.setdefault("namespaces", ("default", "ml"))
    options.setdefault("kubelet", {"backoff_base": 0.5})
    with Cluster(**options) as cluster:
        if not cluster.kubelet.isolated:
            pytest.skip(f"pods cannot have their own names and addresses here: {cluster.kubelet.not_isolated_because}")
        use_cluster(cluster, tmp_path, monkeypatch)
        try:
            yield cluster
        finally:
            stop_followers(px_home)


def live_pods(cluster: Cluster, namespace: str = "default") -> list[str]:
    """Names of the pods that still run or wait to (Pending/Running): what holds node resources."""
    return sorted(
        p["metadata"]["name"]
        for p in cluster.list("pods", namespace)
        if p["status"].get("phase") in (None, "Pending", "Running")
    )


def require(condition: bool, why: str) -> None:
    """Skip with the reason where this machine lacks something; under CI=true (whose machines
    have what these do) fail instead."""
    import pytest

    if condition:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(why)
    pytest.skip(why)


def require_mpi_pods(cluster: Cluster, ssh: bool = True) -> None:
    """What real `mpirun` across pods needs here: pods with their own network (each rank's daemon,
    each worker's sshd on port 22) and, over ssh (mpi-operator), OpenSSH's sshd (.ci/run installs it)."""
    kubelet = cluster.kubelet
    why = kubelet.no_pod_network_because if kubelet else "no kubelet"
    require(kubelet is not None and kubelet.network is not None, f"MPI across pods needs the pod network: {why}")
    require(
        not ssh or os.path.exists("/usr/sbin/sshd"), "OpenSSH's sshd is not installed (apt-get install openssh-server)"
    )


def _group_of(pid: int) -> int:
    try:
        return os.getpgid(pid)
    except OSError:
        return -1


def lose_pod(run_id: str, role: str, index: int) -> int:
    """SIGKILL every process of the replica's pod on the simulated cluster (its agent and its
    training, where torchrun runs there): what a lost node does to it. How many were killed."""
    import signal

    import psutil

    def of_the_replica(env: dict) -> bool:
        replica = (env.get("PX_TASK_TYPE"), env.get("PX_TASK_INDEX"))
        return env.get("PX_RUN_ID") == run_id and replica == (role, str(index))

    found = []
    for process in psutil.process_iter(["environ", "cmdline"]):
        if of_the_replica(process.info.get("environ") or {}):
            found.append(process)
            continue
        # a container whose program a warm interpreter forked (kube_sim/zygotes.py): its process
        # is launch.py, with the container's environment in its launch file; the program's
        # process group is the fork's
        cmdline = process.info.get("cmdline") or []
        if len(cmdline) < 2 or not cmdline[-2].endswith(os.path.join("kube_sim", "launch.py")):
            continue
        with contextlib.suppress(OSError, ValueError, KeyError):
            spec = json.loads(Path(cmdline[-1]).read_text())
            if of_the_replica(spec["env"]):
                found.append(process)
                with contextlib.suppress(OSError, ValueError):
                    fork = int(Path(spec["warm_pid"]).read_text())
                    found += [p for p in psutil.process_iter() if _group_of(p.pid) == fork]
    for process in found:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.send_signal(signal.SIGKILL)
    return len(found)
