"""Admission on the simulated API server: Pod Security and ResourceQuota, with the real
messages (rules cited in tests/kube_sim/admission.py)."""

from __future__ import annotations

import json

import pytest
from kube_sim import ApiError, Cluster
from kube_sim.events import reasons
from kube_sim.training_operator import TrainingOperator
from kube_sim_support import core_api
from kubernetes import client

pytestmark = pytest.mark.kube  # the simulated cluster: HTTP servers, controllers, processes


@pytest.fixture(scope="module")
def cluster():
    with Cluster(controllers=()) as sim:
        yield sim


@pytest.fixture
def core(cluster, tmp_path):
    yield from core_api(cluster, tmp_path)


def pod(name: str, **container) -> dict:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "main", "image": "python:3.11", **container}]}}


def test_a_restricted_namespace_refuses_a_plain_pod_with_the_real_message(cluster, core):
    core.create_namespace(
        {"metadata": {"name": "locked", "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}}
    )
    with pytest.raises(client.ApiException) as caught:
        core.create_namespaced_pod("locked", pod("p"))
    status = json.loads(caught.value.body)
    assert (caught.value.status, status["reason"]) == (403, "Forbidden")
    assert status["message"] == (
        'pods "p" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false '
        '(container "main" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities '
        '(container "main" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or '
        'container "main" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "main" '
        'must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'
    )
    conforming = pod(
        "ok",
        securityContext={
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    )
    core.create_namespaced_pod("locked", conforming)


def test_baseline_refuses_privileged_and_host_namespaces(cluster, core):
    core.create_namespace({"metadata": {"name": "base", "labels": {"pod-security.kubernetes.io/enforce": "baseline"}}})
    bad = pod("p", securityContext={"privileged": True})
    bad["spec"]["hostNetwork"] = True
    with pytest.raises(client.ApiException) as caught:
        core.create_namespaced_pod("base", bad)
    assert json.loads(caught.value.body)["message"] == (
        'pods "p" is forbidden: violates PodSecurity "baseline:latest": privileged (container "main" must not set '
        "securityContext.privileged=true), host namespaces (hostNetwork=true)"
    )


def test_a_quota_refuses_what_exceeds_it(cluster, core):
    core.create_namespace({"metadata": {"name": "quota"}})
    core.create_namespaced_resource_quota(
        "quota", {"metadata": {"name": "small"}, "spec": {"hard": {"requests.cpu": "2", "pods": "5"}}}
    )
    core.create_namespaced_pod("quota", pod("one", resources={"requests": {"cpu": "1500m"}}))
    with pytest.raises(client.ApiException) as caught:
        core.create_namespaced_pod("quota", pod("two", resources={"requests": {"cpu": "1"}}))
    assert json.loads(caught.value.body)["message"] == (
        'pods "two" is forbidden: exceeded quota: small, requested: requests.cpu=1, used: requests.cpu=1500m, '
        "limited: requests.cpu=2"
    )
    with pytest.raises(client.ApiException) as caught:
        core.create_namespaced_pod("quota", pod("three"))
    assert json.loads(caught.value.body)["message"] == (
        'pods "three" is forbidden: failed quota: small: must specify requests.cpu for: main'
    )
    assert core.read_namespaced_resource_quota("small", "quota").status.used["requests.cpu"] == "1500m"


def test_an_operator_that_is_refused_records_failed_create(cluster):
    api = cluster.api
    api.create(
        api.resource("", "v1", "namespaces"),
        {"metadata": {"name": "ops", "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}},
    )
    spec = {"replicas": 1, "template": {"spec": {"containers": [{"name": "pytorch", "image": "python:3.11"}]}}}
    api.create(
        api.resource("kubeflow.org", "v1", "pytorchjobs"),
        {"metadata": {"name": "job"}, "spec": {"pytorchReplicaSpecs": {"Master": spec}}},
        "ops",
    )
    TrainingOperator(api).reconcile_all()
    assert "FailedCreatePod" in reasons(api, "ops", "job")
    (event,) = [
        e for e in api.list(api.resource("", "v1", "events"), "ops")["items"] if e["reason"] == "FailedCreatePod"
    ]
    assert event["message"].startswith(
        'Error creating: pods "job-master-0" is forbidden: violates PodSecurity "restricted:latest"'
    )


def trainjob(name: str, **spec) -> dict:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, **spec},
    }


def test_the_trainer_webhook_wants_a_domain_prefixed_patch_manager(cluster):
    api = cluster.api
    trainjobs = api.resource("trainer.kubeflow.org", "v1alpha1", "trainjobs")
    patch = {
        "manager": "jupyter-px",
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{"name": "node"}]}}},
    }
    with pytest.raises(ApiError) as caught:
        api.create(trainjobs, trainjob("bad", runtimePatches=[patch]), "default")
    assert (caught.value.code, caught.value.status["reason"]) == (403, "Forbidden")
    assert caught.value.status["message"] == (
        'admission webhook "validator.trainjob.trainer.kubeflow.org" denied the request: '
        'spec.runtimePatches.manager: Invalid value: "jupyter-px": '
        'must be a domain-prefixed path (such as "acme.io/foo")'
    )
    api.create(trainjobs, trainjob("good", runtimePatches=[{**patch, "manager": "px.jupyter.org/backend"}]), "default")


def test_the_trainer_webhook_refuses_unknown_jobs_and_reserved_env(cluster):
    api = cluster.api
    trainjobs = api.resource("trainer.kubeflow.org", "v1alpha1", "trainjobs")
    patch = {
        "manager": "px.jupyter.org/backend",
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{"name": "launcher"}]}}},
    }
    with pytest.raises(ApiError) as caught:
        api.create(trainjobs, trainjob("nojob", runtimePatches=[patch]), "default")
    assert caught.value.status["message"].endswith(
        "must not have replicated job that doesn't exist in the runtime job template"
    )
    with pytest.raises(ApiError) as caught:
        api.create(trainjobs, trainjob("env", trainer={"env": [{"name": "PET_NNODES", "value": "2"}]}), "default")
    assert caught.value.status["message"].endswith("must not have reserved envs, invalid envs configured: [PET_NNODES]")
