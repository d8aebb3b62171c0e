"""A pod of a 10,000-replica run starts on the simulated kubelet: the run's ConfigMap (its
cluster described once), its headless Service and one of its pods (the last worker) are created
through the API server, the kubelet runs the pod's entry point for real, and the training code
sees the whole 10,000-address TF_CONFIG and PX_CLUSTER, built inside the pod. Only one pod is
created: what is checked is that such a pod can start and what it sees, not 10,000 processes."""

from __future__ import annotations

import hashlib
import json

import pytest
from kube_sim import Cluster
from kube_sim_support import core_api, wait_for
from kubernetes import client

from jupyter_px.backends.kubernetes.render import render_manifests
from jupyter_px.backends.kubernetes.shared.settings import KubernetesSettings
from jupyter_px.cluster import ClusterEnv, kubernetes_dns_addresses
from jupyter_px.topology import parse_topology

pytestmark = pytest.mark.kube  # the simulated cluster: HTTP servers, controllers, processes

TOPOLOGY = {"framework": "tensorflow", "environment": {"replicas": {"n_workers": 9899, "n_ps": 100}}}
SHOW = (
    "import hashlib, json, os\n"
    "tf = json.loads(os.environ['TF_CONFIG'])\n"
    "print('task', tf['task']['type'], tf['task']['index'], 'workers', len(tf['cluster']['worker']),"
    " 'ps', len(tf['cluster']['ps']), 'chief', tf['cluster']['chief'][0])\n"
    "for name in ('TF_CONFIG', 'PX_CLUSTER'):\n"
    "    print(name, hashlib.sha256(os.environ[name].encode()).hexdigest())\n"
)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def core(tmp_path):
    with Cluster(namespaces=("default",)) as cluster:
        yield from core_api(cluster, tmp_path)


def test_a_pod_of_a_10000_replica_run_starts_and_builds_its_environment(core):
    topology = parse_topology(TOPOLOGY)
    assert topology.total_replicas() == 10_000
    code = {"entrypoint": "train.py", "language": "python", "args": []}
    objects = render_manifests(
        "native", topology, "big", code, {"train.py": SHOW.encode()}, KubernetesSettings(), namespace="default"
    )
    configmap, service = objects[0], objects[1]
    pod = next(o for o in objects if o["metadata"]["name"] == "big-worker-9898")
    assert len(json.dumps(pod)) < 16 * 1024
    core.create_namespaced_config_map("default", configmap)
    core.create_namespaced_service("default", service)
    core.create_namespaced_pod("default", pod)

    def finished():
        status = core.read_namespaced_pod("big-worker-9898", "default").status
        return status.phase if status.phase in ("Succeeded", "Failed") else None

    phase = wait_for(finished, "big-worker-9898 to finish")
    try:
        log = core.read_namespaced_pod_log("big-worker-9898", "default")
    except client.ApiException as error:  # pragma: no cover - shown on failure
        log = f"(no log: {error})"
    assert phase == "Succeeded", log
    lines = log.splitlines()
    assert lines[0] == "task worker 9898 workers 9899 ps 100 chief big-master-0.big.default.svc:2222", log
    reference = ClusterEnv(topology, "big", kubernetes_dns_addresses(topology, "big", "default", subdomain="big"))
    expected = reference.for_replica("worker", 9898)
    assert lines[1] == f"TF_CONFIG {_sha(expected['TF_CONFIG'])}"
    assert lines[2] == f"PX_CLUSTER {_sha(expected['PX_CLUSTER'])}"
    assert len(expected["PX_CLUSTER"]) > 128 * 1024  # more than one env string may hold in a pod spec
