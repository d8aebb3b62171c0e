"""Rights on the simulated cluster and the preflight that asks for them.

The simulated API server authorizes every HTTP call (tests/kube_sim/authorization.py): a denied
call gets the real 403 Forbidden Status, and a SelfSubjectAccessReview answers from the same rules.
Preflight asks for every verb the submit, the follower and stop will use, and lists all that are
missing in one error before anything is created; an operator that does not serve the kind (MXJob on
training-operator v1.9) is refused with the release to install."""

from __future__ import annotations

import json

import pytest
from kube_sim import Cluster
from kube_sim_support import backend_cluster, core_api, wait_for
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes_support import WITHOUT_NODE, use_cluster

import jupyter_px
from jupyter_px.backends.base import BackendError
from jupyter_px.runstore import RunStore

pytestmark = pytest.mark.kube

TORCH = {"framework": "pytorch", "backend": "native", "environment": {"replicas": {"n_workers": 1}}}
MXNET = {"framework": "mxnet", "backend": "kubeflow", "environment": {"replicas": {"n_workers": 1, "n_ps": 1}}}


@pytest.fixture(name="cluster")
def cluster_fixture(tmp_path, monkeypatch, px_home):
    with Cluster(namespaces=("default", "ml"), controllers=WITHOUT_NODE) as cluster:
        use_cluster(cluster, tmp_path, monkeypatch)
        yield cluster


@pytest.fixture(name="core")
def core_fixture(cluster, tmp_path):
    yield from core_api(cluster, tmp_path)


def review(core: client.CoreV1Api, verb: str, resource: str, namespace: str, subresource: str = "") -> bool:
    attributes = {"verb": verb, "resource": resource, "namespace": namespace, "group": ""}
    if subresource:
        attributes["subresource"] = subresource
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {}}
    body["spec"]["resourceAttributes"] = attributes
    answer = client.AuthorizationV1Api(core.api_client).create_self_subject_access_review(body)
    return bool(answer.status.allowed)


def test_a_denied_call_gets_the_api_servers_forbidden_status(cluster, core):
    cluster.deny("list", "pods", group="", namespace="ml")
    with pytest.raises(ApiException) as error:
        core.list_namespaced_pod("ml")
    assert error.value.status == 403
    assert json.loads(error.value.body) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods is forbidden: User "tester" cannot list resource "pods" in API group "" in the namespace "ml"',
        "reason": "Forbidden",
        "details": {"name": "", "kind": "pods"},
        "code": 403,
    }
    core.list_namespaced_pod("default")  # another namespace: allowed
    core.list_namespaced_config_map("ml")  # another resource: allowed
    assert not review(core, "list", "pods", "ml") and review(core, "list", "pods", "default")
    assert review(core, "watch", "pods", "ml")  # a verb is a right of its own


def test_a_subresource_is_a_right_of_its_own(cluster, core):
    """`pods/log` is denied, `pods` is not (the combined resource of RBAC's ResourceMatches)."""
    cluster.deny("get", "pods/log", group="")
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "python:3.11-slim"}]}}
    core.create_namespaced_pod("default", pod)
    assert core.read_namespaced_pod("p", "default").metadata.name == "p"
    with pytest.raises(ApiException) as error:
        core.read_namespaced_pod_log("p", "default")
    assert error.value.status == 403
    message = json.loads(error.value.body)["message"]
    assert message == (
        'pods "p" is forbidden: User "tester" cannot get resource "pods/log" in API group "" in the namespace "default"'
    )
    assert not review(core, "get", "pods", "default", subresource="log") and review(core, "get", "pods", "default")


def test_preflight_lists_every_missing_right_before_creating_anything(cluster, px_home):
    for verb, resource in (("watch", "pods"), ("get", "pods/log"), ("list", "events"), ("delete", "configmaps")):
        cluster.deny(verb, resource, group="")
    with pytest.raises(BackendError) as error:
        jupyter_px.submit("pass\n", TORCH)
    message = str(error.value)
    assert message.startswith(
        "no permission to delete configmaps, watch pods, get pods/log and list events in namespace 'default'"
    ), message
    assert "\n" not in message
    assert not cluster.list("configmaps") and not cluster.list("pods") and RunStore(px_home).run_ids() == []


def test_preflight_asks_about_the_job_kind_and_the_pods_its_operator_makes(cluster, px_home):
    cluster.deny("get", "tfjobs", group="kubeflow.org")
    cluster.deny("deletecollection", "pods", group="")
    topology = {"framework": "tensorflow", "backend": "kubeflow", "environment": {"replicas": {"n_workers": 1}}}
    with pytest.raises(BackendError) as error:
        jupyter_px.submit("pass\n", topology)
    assert "no permission to get tfjobs.kubeflow.org and deletecollection pods in namespace" in str(error.value)
    assert not cluster.list("tfjobs") and not cluster.list("configmaps")


def test_mxjob_on_a_training_operator_without_mxnet_names_the_release_to_install(tmp_path, monkeypatch, px_home):
    """training-operator v1.9 removed MXJob: its cluster has no mxjobs.kubeflow.org CRD."""
    with Cluster(mxjob=False, controllers=WITHOUT_NODE) as cluster:
        use_cluster(cluster, tmp_path, monkeypatch)
        with pytest.raises(BackendError) as error:
            jupyter_px.submit("pass\n", MXNET)
        message = str(error.value)
        assert message.startswith("MXJob is not installed on this cluster: training-operator v1.9 and later"), message
        assert "install v1.8.1" in message and "ref=v1.8.1" in message and message.endswith("use backend: native")
        assert not cluster.list("configmaps") and RunStore(px_home).run_ids() == []


def test_mxjob_is_submitted_where_the_operator_serves_it(cluster, px_home):
    run = jupyter_px.submit("pass\n", MXNET)
    (job,) = cluster.list("mxjobs")
    assert job["metadata"]["name"] == run.run_id
    run.stop()


def test_a_right_taken_away_mid_run_ends_the_follow_with_the_servers_reason(tmp_path, monkeypatch, px_home):
    """The Role loses `get pods/log` after the submit: the follower's log reads get the API
    server's 403, and the follow ends with reason Forbidden and the server's own words."""
    with backend_cluster(tmp_path, monkeypatch, px_home, namespaces=("default",)) as cluster:
        monkeypatch.setenv("PX_K8S_REFUSED_GIVE_UP_S", "1")  # after the fixture, which clears PX_K8S_*
        run = jupyter_px.submit("import time\ntime.sleep(600)\n", TORCH)
        cluster.deny("get", "pods/log", group="")  # after the preflight, which would refuse the run
        status = wait_for(lambda: (s := run.status()).reason == "Forbidden" and s, "Forbidden")
        assert 'cannot get resource "pods/log" in API group "" in the namespace "default"' in status.message
        assert "no permission to read the run's pod logs" in status.message
        run.stop()
