"""The kubeflow-trainer backend on the Trainer releases and Kubernetes versions a cluster may run,
on the simulated cluster: the TrainJob API the cluster serves is read from its CRD (v2.2+
`runtimePatches`, v2.1 `podTemplateOverrides`; a field the CRD lacks is pruned silently by the
API server), the torch runtime's port is the one in PX_CLUSTER, and before Kubernetes 1.28 (no
completion-index label on pods) each node is still its own replica."""

from __future__ import annotations

import pytest
from kube_sim.trainer_controller import num_proc_per_node, runtime_resources
from kube_sim_support import backend_cluster
from kubernetes_support import DEADLINE_S
from test_kube_sim_backends import DDP

import jupyter_px
from jupyter_px.backends.base import BackendError
from jupyter_px.backends.kubernetes.trainer.manifests import pod_changes

pytestmark = pytest.mark.kube

TOPOLOGY = {"framework": "pytorch", "backend": "kubeflow-trainer", "environment": {"replicas": {"n_workers": 2}}}
SHOW_CLUSTER = "import os\nprint('cluster', os.environ['PX_CLUSTER'], flush=True)\n"


def ddp_succeeds(run) -> None:
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Succeeded", (status, run.logs("master", 0))
    for role, index in (("master", 0), ("worker", 0), ("worker", 1)):
        assert "identical True world 3" in run.logs(role, index), (role, index, run.logs(role, index))


@pytest.mark.parametrize("trainer", ["2.1", "2.3"])
def test_ddp_on_the_trainer_release_the_cluster_runs(tmp_path, monkeypatch, px_home, trainer):
    """On Trainer v2.1 the TrainJob has no runtimePatches: sent anyway, they were pruned and the
    run's ConfigMap never reached the pods."""
    with backend_cluster(tmp_path, monkeypatch, px_home, trainer=trainer) as sim:
        run = jupyter_px.submit(SHOW_CLUSTER + DDP, TOPOLOGY)
        ddp_succeeds(run)
        (trainjob,) = sim.list("trainjobs")
        field = "podTemplateOverrides" if trainer == "2.1" else "runtimePatches"
        assert field in trainjob["spec"], trainjob["spec"]
        log = run.logs("master", 0)
        assert f"{trainjob['metadata']['name']}-node-0-0." in log and ":29500" in log, log


def test_ddp_on_kubernetes_without_the_completion_index_label(tmp_path, monkeypatch, px_home):
    """Kubernetes 1.27: the Job controller annotates the completion index but does not label it;
    the nodes are still told apart (each replica's log is its own)."""
    with backend_cluster(tmp_path, monkeypatch, px_home, version="1.27.0") as sim:
        run = jupyter_px.submit(DDP, TOPOLOGY)
        ddp_succeeds(run)
        assert all("batch.kubernetes.io/job-completion-index" not in p["metadata"]["labels"] for p in sim.list("pods"))


def test_an_unknown_trainer_api_is_a_clear_error(tmp_path, monkeypatch, px_home):
    with backend_cluster(tmp_path, monkeypatch, px_home) as sim:
        crds = sim.api.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        crd = sim.api.get(crds, "", "trainjobs.trainer.kubeflow.org")
        for version in crd["spec"]["versions"]:
            version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"].pop("runtimePatches")
        sim.api.update(crds, crd, "")
        with pytest.raises(BackendError, match="none of runtimePatches, podTemplateOverrides or podSpecOverrides"):
            jupyter_px.submit("pass\n", TOPOLOGY)
        assert not sim.list("trainjobs")


def test_trainer_v2_0_is_refused_with_the_reason():
    with pytest.raises(BackendError, match="Trainer v2.0 cannot label a TrainJob's pods"):
        pod_changes("v2.0", ["node"], {"labels": {}}, {"containers": [{"name": "node"}]})


def test_what_trainer_v2_1_cannot_carry_is_an_error_not_dropped():
    with pytest.raises(BackendError, match=r"cannot carry securityContext, containers\[node\]\.securityContext"):
        pod_changes(
            "v2.1", ["node"], {}, {"securityContext": {}, "containers": [{"name": "node", "securityContext": {}}]}
        )


@pytest.mark.parametrize(
    ("trainer", "resources", "expected"),
    [
        ({}, {"requests": {"cpu": "2"}, "limits": {"cpu": "4"}}, 2),  # the request before the limit
        ({}, {"limits": {"cpu": "3"}}, 3),  # the limit only without a request
        ({}, {"requests": {"cpu": "1500m"}}, 2),  # rounded up (Quantity.Value)
        ({}, {"requests": {"cpu": "100m"}}, 1),
        ({}, {}, 1),  # nothing known: at least 1
        ({}, {"limits": {"nvidia.com/gpu": "2", "cpu": "8"}}, "auto"),  # a GPU node: torchrun decides
        ({"numProcPerNode": 3}, {"requests": {"cpu": "8"}}, 3),
    ],
)
def test_auto_num_proc_per_node_follows_torch_go(trainer, resources, expected):
    """kubeflow/trainer v2.3.0 pkg/runtime/framework/plugins/torch/torch.go: `auto` without GPUs
    is getNumCPUPerNode of the node's resources."""
    assert num_proc_per_node(trainer, {"torch": {}}, resources, (2, 3)) == expected


def test_auto_num_proc_per_node_falls_back_to_the_runtimes_resources():
    """ExtractResourcePerNodeFromRuntime: without the TrainJob's resourcesPerNode, the runtime's
    trainer container's resources decide."""
    js_spec = {"replicatedJobs": [{"name": "node", "template": {
        "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
        "spec": {"template": {"spec": {"containers": [{"name": "node", "resources": {"requests": {"cpu": "3"}}}]}}},
    }}]}  # fmt: skip
    assert num_proc_per_node({}, {"torch": {}}, runtime_resources(js_spec), (2, 3)) == 3
