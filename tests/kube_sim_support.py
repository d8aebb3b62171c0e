"""What the simulated cluster's tests share: a deadline, waiting on a condition, a namespace of
their own per test, and the official client pointed at the simulation."""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Iterator
from pathlib import Path

from kube_sim import Cluster
from kubernetes import client, config

#: Generous: pods are real processes on a shared, loaded machine.
DEADLINE_S = 120.0
_NAMESPACES = itertools.count()


def wait_for(predicate, what: str, timeout: float = DEADLINE_S):
    """The predicate's first true value, polled; AssertionError naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def fresh_namespace(cluster: Cluster, test_name: str, prefix: str) -> str:
    """A namespace named after the test (unique within the session), so tests of one module-scoped
    cluster do not see each other's objects."""
    tail = re.sub(r"[^a-z0-9]+", "-", test_name.lower())[5:40].strip("-")
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
