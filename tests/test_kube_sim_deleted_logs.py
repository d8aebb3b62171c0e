"""No replica's log is lost when its pod is deleted while it runs: by our stop, by the follower
when the job ends (cleanPodPolicy None), or by the training operator's cleanPodPolicy Running.
Above 16 replicas the follower streams only the master live and collects the others' logs when
their containers end; a deleted pod takes its log with it, so the follower reads what such a pod
logged before deleting it (stop, the job's end), or as soon as it sees the pod's
deletionTimestamp (someone else's delete: the kubelet serves the log until the container has
exited and the pod is removed).

Hollow pods (tests/kube_sim/hollow.py): no processes, each container prints `lines` lines and
runs on silently; `grace` is how long a deleted pod's container takes to exit."""

from __future__ import annotations

import pytest
from kube_sim import Cluster, scheduling
from kube_sim.hollow import HollowKubelet, Script
from kube_sim_support import wait_for
from kubernetes_support import DEADLINE_S, stop_followers

import jupyter_px

pytestmark = pytest.mark.kube

WORKERS = 20  # + the master: above the 16 replicas whose logs are all streamed live
LINES = 5


@pytest.fixture(name="hollow_cluster")
def hollow_cluster_fixture(request, tmp_path, monkeypatch, px_home):
    """The cluster with a hollow node, running the script the test gives (indirect parameter)."""
    script = request.param
    cluster = Cluster(controllers=("gc", "scheduler", "training-operator"), node=scheduling.node(pods="200", cpu="400"))
    hollow = HollowKubelet(cluster.api, Script(**script))
    with cluster:
        hollow.start()
        monkeypatch.setenv("KUBECONFIG", cluster.kubeconfig(tmp_path / "kubeconfig"))
        monkeypatch.setenv("PX_K8S_CONFIG", str(tmp_path / "no-settings.yaml"))
        monkeypatch.setenv("PX_K8S_IMAGE", "python:3.11-slim")
        try:
            yield cluster, hollow
        finally:
            stop_followers(px_home)
            hollow.stop()


def assert_every_line_stored(run, hollow) -> None:
    for r in run.status().replicas:
        name = next(n for n in hollow.produced if n.endswith(f"-{r.role}-{r.index}"))
        stored = [line for line in run.logs(r.role, r.index).splitlines() if line.startswith(name)]
        assert stored == [f"{name} line {n}" for n in range(hollow.produced[name])], (name, stored)


@pytest.mark.parametrize(
    "hollow_cluster", [{"duration": 600, "interval": 0.05, "lines": LINES, "grace": 0.0}], indirect=True
)
def test_stop_stores_every_replicas_log_before_deleting_its_pod(hollow_cluster):
    """Pods whose containers exit the moment they are deleted: only a read before the delete
    keeps the log of a replica nobody streams."""
    cluster, hollow = hollow_cluster
    topology = {"framework": "pytorch", "backend": "native", "environment": {"replicas": {"n_workers": WORKERS}}}
    run = jupyter_px.submit("pass\n", topology)
    wait_for(
        lambda: len(hollow.produced) == WORKERS + 1 and set(hollow.produced.values()) == {LINES},
        "every replica's lines",
        DEADLINE_S,
    )
    status = run.stop()
    assert status.state.value == "Stopped", status
    assert_every_line_stored(run, hollow)
    wait_for(lambda: not cluster.list("pods"), "the stopped run's pods deleted", DEADLINE_S)


@pytest.mark.parametrize(
    "hollow_cluster",
    [
        {
            "duration": 600,
            "interval": 0.05,
            "lines": LINES,
            # a deleted worker's container exits 3 s after its delete (a pod's default is 30 s):
            # the follower reads 20 such pods' logs 8 at a time, and at 1 s the project's CI, four
            # test workers on a loaded machine, once found a worker's pod gone before its read
            "grace": 3.0,
        }
    ],
    indirect=True,
)
@pytest.mark.parametrize("policy", ["Running", "None"])
def test_the_cleanup_of_running_pods_keeps_their_logs(hollow_cluster, monkeypatch, policy):
    """The master ends (once the follower follows); the PyTorchJob succeeds and the workers, still
    running, are deleted: by the operator (cleanPodPolicy Running, a user's setting), each worker's
    log read while its pod terminates; or by the follower (None, the default), once it has them."""
    monkeypatch.setenv("PX_K8S_CLEAN_POD_POLICY", policy)
    cluster, hollow = hollow_cluster
    topology = {"framework": "pytorch", "backend": "kubeflow", "environment": {"replicas": {"n_workers": WORKERS}}}
    run = jupyter_px.submit("pass\n", topology)
    wait_for(
        lambda: len(hollow.produced) == WORKERS + 1 and set(hollow.produced.values()) == {LINES},
        "every replica's lines",
        DEADLINE_S,
    )
    wait_for(lambda: run.logs("master", 0).count("\n") == LINES, "the follower at work", DEADLINE_S)
    hollow.end(f"{run.run_id}-master-0")
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Succeeded", status
    assert len(hollow.produced) == WORKERS + 1 and set(hollow.produced.values()) == {LINES}
    assert_every_line_stored(run, hollow)
    workers = [r for r in status.replicas if r.role == "worker"]
    assert {r.state.value for r in workers} == {"Stopped"}, workers
