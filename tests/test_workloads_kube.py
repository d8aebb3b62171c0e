"""The reference workloads (examples/workloads/) on the simulated Kubernetes cluster, one cluster
for the module (with the pod network: TensorFlow's servers bind port 2222 in every pod): each
workload on a backend its framework fits, checked for what it computed (tests/workloads_support.py):
the same final loss as `torchrun` of the same script (PyTorch) or as the local backend's run
(MultiWorkerMirroredStrategy), every step in the metrics and in TensorBoard, both carried back
from the pods' log streams by the follower. The checkpoints stay in the pods (no shared volume
here), so they are checked on the local backend and on Slurm only.

One workload per backend keeps the set within CI's budget; together they cover the three
backends and the four workloads: PyTorch on plain pods (native), a PyTorchJob (kubeflow) and a
TrainJob (kubeflow-trainer), TensorFlow on a TFJob and on plain pods.
"""

from __future__ import annotations

import importlib.util

import pytest
from kube_sim import Cluster
from kube_sim.kubelet_network import PodNetworkUnavailable
from kubernetes_support import stop_followers, use_cluster
from workloads_support import DEADLINE_S, check_run, reference_loss, shared_folder, submit

from jupyter_px.service import RunService

pytestmark = pytest.mark.kube


@pytest.fixture(scope="module")
def cluster():
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("tensorflow is not installed (it is in the test extras)")
    try:
        started = Cluster(namespaces=("default",), kubelet={"backoff_base": 0.5}, pod_network=True)
    except PodNetworkUnavailable as error:
        pytest.skip(f"pods cannot have their own network namespaces here: {error}")
    with started:
        yield started


@pytest.fixture
def sim(cluster, tmp_path, monkeypatch, px_home):
    use_cluster(cluster, tmp_path, monkeypatch)
    try:
        yield cluster
    finally:
        stop_followers(px_home)


@pytest.fixture
def shared(tmp_path_factory):
    return shared_folder(tmp_path_factory)


@pytest.mark.parametrize(
    ("name", "backend"),
    [
        ("torch_cnn", "native"),
        ("torch_lm", "kubeflow"),
        ("torch_cnn", "kubeflow-trainer"),
        ("tf_mwms", "kubeflow"),
        ("tf_ps", "native"),
    ],
)
def test_a_workload_computes_on_kubernetes_what_it_computes_here(name, backend, sim, px_home, shared):
    expected = reference_loss(name, 1, shared) if name != "tf_ps" else None
    service = RunService()
    run_id = submit(service, name, backend, workers=1)
    service.wait(run_id, timeout=DEADLINE_S)
    loss = check_run(service, run_id, name, checkpoints=False, expected=expected)
    if name == "tf_ps":
        assert loss < 1.0, loss  # below chance (ln 4) on held-out points
