"""Submit, preflight, rollback and stop through the official client over HTTP to the simulated
cluster (tests/kube_sim): its API server's rules, its garbage collector, its kubelet."""

from __future__ import annotations

import pytest
from kube_sim import Cluster
from kubernetes_support import DEADLINE_S, kube_fixture, use_cluster  # noqa: F401 (kube_fixture: the `kube` fixture)

import jupyter_px
from jupyter_px.backends import get_backend
from jupyter_px.backends.base import BackendError
from jupyter_px.backends.kubernetes.shared.names import LABEL_RUN
from jupyter_px.runstore import RunStore

TORCH = {"framework": "pytorch", "backend": "native", "environment": {"replicas": {"n_workers": 2}}}
TF_KUBEFLOW = {
    "framework": "tensorflow",
    "backend": "kubeflow",
    "environment": {"replicas": {"n_workers": 2, "n_ps": 1}},
}


@pytest.mark.pods_stay_pending
def test_native_submit_creates_owned_objects_and_stop_deletes_them(kube, px_home):
    run = jupyter_px.submit("print('hi')\n", TORCH, name="demo")
    assert run.record.backend == "native"
    (configmap,) = kube.list("configmaps")
    pods = kube.list("pods", selector=f"{LABEL_RUN}={configmap['metadata']['name']}")
    assert sorted(p["metadata"]["name"] for p in pods) == sorted(
        f"{run.run_id}-{role}" for role in ("master-0", "worker-0", "worker-1")
    )
    services = kube.list("services")
    assert len(services) == 1 and services[0]["spec"]["clusterIP"] == "None"
    owner = configmap["metadata"]["uid"]
    for obj in pods + services:
        assert obj["metadata"]["ownerReferences"][0]["uid"] == owner
    assert "print('hi')" in configmap["data"]["code.main.py"]
    assert run.status().state.value == "Pending"

    run.stop()
    status = run.status()
    assert (status.state.value, status.reason) == ("Stopped", "StoppedByUser")  # the local backend's name too
    assert not kube.list("pods") and not kube.list("services") and not kube.list("configmaps")


@pytest.mark.pods_stay_pending
def test_a_service_configured_with_a_namespace_submits_there(kube, px_home):
    """A Jupyter server configured with `kubernetes_namespace` submits its runs there (its run
    service carries the setting), whatever the settings file and PX_K8S_* say."""
    from jupyter_px.service import RunService, SourceText, Submission

    service = RunService(kubernetes={"namespace": "ml"})
    run_id = service.submit(Submission(SourceText("print('hi')\n"), TORCH, name="in-ml"))
    assert kube.list("configmaps") == []
    (configmap,) = kube.list("configmaps", namespace="ml")
    assert len(kube.list("pods", namespace="ml", selector=f"{LABEL_RUN}={configmap['metadata']['name']}")) == 3
    service.stop(run_id)
    assert kube.list("pods", namespace="ml") == [] and kube.list("configmaps", namespace="ml") == []


def test_every_object_names_the_configmap_as_owner_and_pods_deleted_with_it_read_lost(kube, px_home):
    """Deleting a run's ConfigMap deletes its objects, but that is the cluster's garbage collector
    (here the simulation's: asynchronous, after the DELETE has answered, and each pod deleted
    gracefully by the kubelet), not our code. What our code does, and what this checks: (1) every
    object carries an ownerReference the collector can follow (apiVersion, kind, name and uid of
    the ConfigMap, created first so its uid is known); (2) the follower records what it then sees:
    replicas whose pods someone else deleted read Failed (PodDeleted), not Stopped, and the run
    fails (nobody makes a native pod again), logs kept."""
    import os

    import kubernetes
    from kubernetes_support import wait_for

    code = "import os, time\nprint('before the delete', flush=True)\ntime.sleep(600)\n"
    run = jupyter_px.submit(code, TORCH)
    (configmap,) = kube.list("configmaps")
    meta = configmap["metadata"]
    for obj in kube.list("pods") + kube.list("services"):
        (reference,) = obj["metadata"]["ownerReferences"]
        assert (reference["apiVersion"], reference["kind"]) == ("v1", "ConfigMap"), obj["metadata"]["name"]
        assert (reference["name"], reference["uid"]) == (meta["name"], meta["uid"]), obj["metadata"]["name"]
    wait_for(lambda: run.status().counts() == {"Running": 3}, what="every replica Running")
    wait_for(lambda: run.logs("master", 0) == "before the delete\n", what="the log stored")

    api = kubernetes.config.new_client_from_config(config_file=os.environ["KUBECONFIG"])
    kubernetes.client.CoreV1Api(api).delete_namespaced_config_map(meta["name"], "default")
    status = run.wait(timeout=DEADLINE_S)  # nobody makes a native pod again: the run fails
    assert (status.state.value, status.reason) == ("Failed", "ReplicaFailed"), status
    assert "PodDeleted" in {r.reason for r in status.replicas}
    assert {r.state.value for r in status.replicas} <= {"Failed", "Stopped"}
    assert run.logs("master", 0) == "before the delete\n"
    wait_for(lambda: not kube.list("pods") and not kube.list("services"), what="the collector to delete the rest")
    run.stop()


@pytest.mark.pods_stay_pending
def test_partial_failure_rolls_back_and_reports_the_api_reason(kube, px_home):
    kube.fail("POST", "pods", 422, "Invalid", 'Pod "x" is invalid: spec.containers[0].image: Required value', nth=2)
    with pytest.raises(BackendError) as error:
        jupyter_px.submit("pass\n", TORCH, name="broken")
    message = str(error.value)
    assert "422" in message and "spec.containers[0].image: Required value" in message
    assert "nothing of the run was left" in message
    assert not kube.list("pods") and not kube.list("services") and not kube.list("configmaps")
    assert RunStore(px_home).run_ids() == []  # the run store keeps nothing of a run that did not start


@pytest.mark.pods_stay_pending
def test_already_exists_is_reported(kube, px_home):
    kube.fail("POST", "services", 409, "AlreadyExists", 'services "x" already exists')
    with pytest.raises(BackendError, match="409.*already exists"):
        jupyter_px.submit("pass\n", TORCH)
    assert not kube.list("configmaps") and not kube.list("pods")


@pytest.mark.pods_stay_pending
def test_kubeflow_submit_creates_the_job_owned_by_the_configmap(kube, px_home):
    run = jupyter_px.submit("pass\n", TF_KUBEFLOW)
    (job,) = kube.list("tfjobs")
    assert job["metadata"]["ownerReferences"][0]["kind"] == "ConfigMap"
    assert set(job["spec"]["tfReplicaSpecs"]) == {"Chief", "Worker", "PS"}
    run.stop()
    assert not kube.list("tfjobs") and not kube.list("configmaps")
    assert run.status().state.value == "Stopped"


@pytest.mark.pods_stay_pending
def test_trainer_backend_submits_a_trainjob(kube, px_home, monkeypatch):
    import jupyter_px.backends.kubernetes.shared.preflight as preflight_module

    monkeypatch.setattr(preflight_module, "check_runtime", lambda cluster, name: None)  # runtimes: cluster-scoped
    from jupyter_px.runstore import RunRecord
    from jupyter_px.topology import parse_topology, to_dict

    store = RunStore(px_home)
    topology = parse_topology({"framework": "pytorch", "environment": {"replicas": {"n_workers": 3}}})
    store.create(
        RunRecord(run_id="trainer-run", backend="kubeflow-trainer", topology=to_dict(topology)), {"main.py": "pass\n"}
    )
    backend = get_backend("kubeflow-trainer", store)
    handle = backend.submit("trainer-run")
    (job,) = kube.list("trainjobs")
    assert job["spec"]["trainer"]["numNodes"] == 4 and handle.detail["objects"] == 2
    backend.stop("trainer-run")
    assert not kube.list("trainjobs")


@pytest.mark.pods_stay_pending
@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        (lambda k, mp: mp.setenv("PX_K8S_NAMESPACE", "nope"), "namespace 'nope' does not exist"),
        (lambda k, mp: k.deny("create", "pods"), "no permission to create pods in namespace 'default'"),
        (lambda k, mp: k.deny("create", "tfjobs"), "no permission to create tfjobs"),
        # what only the follower and clean do on a kubeflow run: it creates no Service and no pod
        (lambda k, mp: k.deny("delete", "pods"), "no permission to delete pods in namespace 'default'"),
        (lambda k, mp: k.deny("list", "services"), "no permission to list services in namespace 'default'"),
    ],
)
def test_preflight_says_what_is_wrong_in_one_line(kube, px_home, monkeypatch, setup, expected):
    setup(kube, monkeypatch)
    topology = TF_KUBEFLOW if "tfjobs" in expected or "delete pods" in expected or "services" in expected else TORCH
    with pytest.raises(BackendError) as error:
        jupyter_px.submit("pass\n", topology)
    assert expected in str(error.value) and "\n" not in str(error.value)
    assert not kube.list("configmaps") and RunStore(px_home).run_ids() == []


def test_preflight_names_an_operator_that_is_not_installed(tmp_path, monkeypatch, px_home):
    """A cluster with only the PyTorchJob CRD (part of Kubeflow installed) has no TFJob."""
    with Cluster(crds=("pytorchjobs.kubeflow.org",), controllers=()) as cluster:
        use_cluster(cluster, tmp_path, monkeypatch)
        with pytest.raises(BackendError) as error:
            jupyter_px.submit("pass\n", TF_KUBEFLOW)
        message = str(error.value)
        assert "TFJob is not installed on this cluster: install the Kubeflow training operator" in message
        assert "\n" not in message
        assert not cluster.list("configmaps") and RunStore(px_home).run_ids() == []


def test_unreachable_cluster(tmp_path, monkeypatch, px_home):
    with Cluster(controllers=()) as cluster:
        config = cluster.kubeconfig(tmp_path / "kubeconfig")
    monkeypatch.setenv("KUBECONFIG", config)  # the server is gone now
    monkeypatch.setenv("PX_K8S_CONFIG", str(tmp_path / "none.yaml"))
    with pytest.raises(BackendError, match="cannot reach the Kubernetes API at http://127.0.0.1"):
        jupyter_px.submit("pass\n", TORCH)


def test_no_configuration_at_all(tmp_path, monkeypatch, px_home):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("PX_K8S_CONFIG", str(tmp_path / "none.yaml"))
    with pytest.raises(BackendError, match="no Kubernetes configuration"):
        jupyter_px.submit("pass\n", TORCH)


@pytest.mark.pods_stay_pending
def test_thousand_worker_create_uses_bounded_parallelism(kube, px_home):
    kube.latency = 0.002
    topology = {"framework": "pytorch", "backend": "native", "environment": {"replicas": {"n_workers": 999}}}
    run = jupyter_px.submit("pass\n", topology)
    assert len(kube.list("pods")) == 1000 and len(kube.list("services")) == 1
    assert 2 <= kube.max_in_flight <= 16 + 1  # the pool, plus the follower's watch
    run.stop()
    assert not kube.list("pods")
