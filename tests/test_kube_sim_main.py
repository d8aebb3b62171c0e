"""`python -m tests.kube_sim --kubeconfig FILE` starts the whole simulation from the repository
root, writes a kubeconfig and serves until interrupted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kubernetes import client, config
from waiting import wait_for

pytestmark = pytest.mark.kube  # the simulated cluster: HTTP servers, controllers, processes

ROOT = Path(__file__).resolve().parent.parent


def test_the_simulation_starts_serves_and_stops_on_interrupt(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.kube_sim", "--kubeconfig", str(kubeconfig), "--without", "kubelet"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        line = process.stdout.readline().decode()
        assert line.startswith("simulated cluster at https://127.0.0.1:"), line  # TLS, as a real API server
        api_client = config.new_client_from_config(str(kubeconfig))
        body = {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "job"},
            "spec": {
                "pytorchReplicaSpecs": {
                    "Master": {
                        "replicas": 1,
                        "template": {"spec": {"containers": [{"name": "pytorch", "image": "python:3.11"}]}},
                    }
                }
            },
        }
        client.CustomObjectsApi(api_client).create_namespaced_custom_object(
            "kubeflow.org", "v1", "default", "pytorchjobs", body
        )
        core = client.CoreV1Api(api_client)
        # the operator acts in the started simulation
        wait_for(lambda: core.list_namespaced_pod("default").items, what="a pod from the operator", timeout=60)
        assert core.list_namespaced_pod("default").items[0].metadata.name == "job-master-0"
        api_client.close()
    finally:
        process.send_signal(signal.SIGINT)
        try:
            out, _ = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGUSR1)  # every thread's stack, for the failure below
            time.sleep(2)
            process.kill()
            out, _ = process.communicate()
            pytest.fail("the simulation did not stop within 60 s of SIGINT; its threads:\n" + out.decode()[-20000:])
    assert process.returncode == 0 and out.decode().rstrip().endswith("stopped")
