"""What the Kubeflow operators need from the rendering, on the simulated cluster: the run is created
through the backend, the simulated operator and kubelet act, the test reads what the pods did."""

from __future__ import annotations

import pytest
from k8s_support import DEADLINE_S
from kube_sim_support import backend_cluster
from test_kube_sim_backends import DDP

import jupyter_px

pytestmark = pytest.mark.kube


@pytest.fixture(name="sim")
def sim_fixture(tmp_path, monkeypatch, px_home):
    with backend_cluster(tmp_path, monkeypatch, px_home) as cluster:
        yield cluster


def test_pytorch_ddp_without_a_master_on_kubeflow(sim, px_home):
    """`n_masters: 0` (valid locally and on native): the operator gives MASTER_ADDR/RANK/WORLD_SIZE
    only to a job with a Master replica, so worker 0 is the Master; each worker keeps its index
    as its rank, its logs under its own name."""
    code = "import os\nprint('index', os.environ['PX_TASK_INDEX'], 'rank', os.environ.get('RANK'))\n" + DDP
    topology = {
        "framework": "pytorch",
        "backend": "kubeflow",
        "environment": {"replicas": {"n_masters": 0, "n_workers": 3}},
    }
    run = jupyter_px.submit(code, topology)
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Succeeded", (status, run.logs("worker", 0))
    (job,) = sim.list("pytorchjobs")
    assert {t: s["replicas"] for t, s in job["spec"]["pytorchReplicaSpecs"].items()} == {"Master": 1, "Worker": 2}
    for index in range(3):
        log = run.logs("worker", index)
        assert f"index {index} rank {index}" in log, log
        assert "identical True world 3" in log, log
