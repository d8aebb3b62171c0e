"""The simulated batch/v1 Job controller (rules cited in tests/kube_sim/job_controller.py)."""

from __future__ import annotations

import pytest
from kube_sim import ApiError, Cluster
from kube_sim.job_controller import JobController
from kube_sim_support import DEADLINE_S
from waiting import wait_for

pytestmark = pytest.mark.kube  # the simulated cluster: HTTP servers, controllers, processes


def indexed_job(name: str, completions: int = 2, restart: str = "Never", code: str = "print(1)") -> dict:
    return {"metadata": {"name": name}, "spec": {
        "completionMode": "Indexed", "completions": completions, "parallelism": completions,
        "template": {"spec": {"subdomain": name, "restartPolicy": restart, "containers": [
            {"name": "main", "image": "python:3.11", "command": ["python3", "-c", code]}]}}}}  # fmt: skip


@pytest.mark.parametrize(("version", "label"), [("1.33.0", True), ("1.27.0", False)])
def test_indexed_pods_get_their_index_and_hostname(version, label):
    with Cluster(version=version, controllers=("gc",)) as sim:
        jobs = sim.api.resource("batch", "v1", "jobs")
        job = sim.api.create(jobs, indexed_job("train"), "default")
        assert job["spec"]["selector"] == {
            "matchLabels": {"batch.kubernetes.io/controller-uid": job["metadata"]["uid"]}
        }
        JobController(sim.api).reconcile_all()
        pods = sorted(
            sim.list("pods"), key=lambda p: p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
        )
        assert [p["metadata"]["name"][: len("train-0-")] for p in pods] == ["train-0-", "train-1-"]
        assert [p["spec"]["hostname"] for p in pods] == ["train-0", "train-1"]
        assert ("batch.kubernetes.io/job-completion-index" in pods[0]["metadata"]["labels"]) is label
        (index_env,) = [e for e in pods[1]["spec"]["containers"][0]["env"] if e["name"] == "JOB_COMPLETION_INDEX"]
        where = "labels" if label else "annotations"
        assert (
            index_env["valueFrom"]["fieldRef"]["fieldPath"]
            == f"metadata.{where}['batch.kubernetes.io/job-completion-index']"
        )
        assert pods[0]["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "train"


def test_a_job_pod_must_not_restart_always():
    with Cluster(controllers=()) as sim:
        with pytest.raises(ApiError) as caught:
            sim.api.create(sim.api.resource("batch", "v1", "jobs"), indexed_job("bad", restart="Always"), "default")
        assert 'spec.template.spec.restartPolicy: Unsupported value: "Always"' in caught.value.status["message"]


def test_an_indexed_job_runs_to_complete_and_its_pods_see_their_index():
    with Cluster(kubelet={"backoff_base": 0.2}) as sim:
        jobs = sim.api.resource("batch", "v1", "jobs")
        sim.api.create(
            jobs, indexed_job("train", code="import os; print('index', os.environ['JOB_COMPLETION_INDEX'])"), "default"
        )
        status = wait_for(
            lambda: _status_with(sim, jobs, lambda s: any(c["type"] == "Complete" for c in s.get("conditions") or [])),
            "the Job to complete",
            timeout=DEADLINE_S,
        )
        assert [c["type"] for c in status["conditions"]] == ["SuccessCriteriaMet", "Complete"]
        assert status["completedIndexes"] == "0-1" and status["succeeded"] == 2
        logs = sorted(b"".join(sim.kubelet.logs(p, "main", {})).decode() for p in sim.list("pods"))
        assert logs == ["index 0\n", "index 1\n"]


def test_failures_beyond_the_backoff_limit_fail_the_job():
    """Pods that really fail (exit 1, restartPolicy Never): the second failure passes backoffLimit 1."""
    with Cluster(kubelet={"backoff_base": 0.2}) as sim:
        jobs = sim.api.resource("batch", "v1", "jobs")
        body = indexed_job("train", completions=1, code="raise SystemExit(1)")
        body["spec"]["backoffLimit"] = 1
        sim.api.create(jobs, body, "default")
        status = wait_for(
            lambda: _status_with(sim, jobs, lambda s: any(c["type"] == "Failed" for c in s.get("conditions") or [])),
            "the Job to fail",
            timeout=DEADLINE_S,
        )
        conditions = status["conditions"]
        assert [(c["type"], c["reason"]) for c in conditions] == [
            ("FailureTarget", "BackoffLimitExceeded"),
            ("Failed", "BackoffLimitExceeded"),
        ]
        assert conditions[1]["message"] == "Job has reached the specified backoff limit"
        failed = [p for p in sim.list("pods") if p["status"].get("phase") == "Failed"]
        assert len(failed) == 2, [p["metadata"]["name"] for p in sim.list("pods")]  # the first try and one retry


def jobset(name: str, nodes: int = 2, code: str = "print(1)") -> dict:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name}, "spec": {
        "replicatedJobs": [{"name": "node", "replicas": 1, "template": {"spec": {
            "completions": nodes, "parallelism": nodes, "template": {"spec": {"containers": [
                {"name": "node", "image": "python:3.11", "command": ["python3", "-c", code]}]}}}}}]}}  # fmt: skip


def test_a_jobset_makes_labelled_jobs_and_its_headless_service():
    with Cluster(controllers=("gc",)) as sim:
        from kube_sim.jobset_controller import RESOURCE, JobSetController

        created = sim.api.create(RESOURCE, jobset("train"), "default")
        assert created["spec"]["replicatedJobs"][0]["template"]["spec"]["completionMode"] == "Indexed"  # defaulted
        JobSetController(sim.api).reconcile_all()
        (job,) = sim.list("jobs")
        assert job["metadata"]["name"] == "train-node-0"
        labels = job["spec"]["template"]["metadata"]["labels"]
        assert {
            k: v for k, v in labels.items() if k.startswith("jobset.sigs.k8s.io/") and k != "jobset.sigs.k8s.io/job-key"
        } == {
            "jobset.sigs.k8s.io/jobset-name": "train",
            "jobset.sigs.k8s.io/replicatedjob-name": "node",
            "jobset.sigs.k8s.io/restart-attempt": "0",
            "jobset.sigs.k8s.io/replicatedjob-replicas": "1",
            "jobset.sigs.k8s.io/global-replicas": "1",
            "jobset.sigs.k8s.io/job-index": "0",
            "jobset.sigs.k8s.io/job-global-index": "0",
        }
        assert job["spec"]["template"]["spec"]["subdomain"] == "train"
        assert job["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
        service = sim.get("services", "train")
        assert service["spec"]["clusterIP"] == "None" and service["spec"]["publishNotReadyAddresses"] is True


def test_a_jobset_runs_and_its_pods_answer_by_their_dns_names():
    code = (
        "import os, socket\n"
        "me = socket.gethostname()\n"
        "print(me, socket.gethostbyname(f'train-node-0-0.train.default.svc') != '')\n"
    )
    with Cluster(kubelet={"backoff_base": 0.2}) as sim:
        if not sim.kubelet.isolated:
            pytest.skip(f"pods cannot have their own names here: {sim.kubelet.not_isolated_because}")
        from kube_sim.jobset_controller import RESOURCE

        sim.api.create(RESOURCE, jobset("train", code=code), "default")
        status = wait_for(
            lambda: _status_with(sim, RESOURCE, lambda s: s.get("terminalState")),
            "the JobSet to end",
            timeout=DEADLINE_S,
        )
        assert status["terminalState"] == "Completed"
        assert status["conditions"][-1]["reason"] == "AllJobsCompleted"
        logs = sorted(b"".join(sim.kubelet.logs(p, "node", {})).decode() for p in sim.list("pods"))
        assert logs == ["train-node-0-0 True\n", "train-node-0-1 True\n"]


def _status_with(sim, resource, holds) -> dict | None:
    """The `train` object's status once `holds(status)` is true, else None."""
    status = sim.api.get(resource, "default", "train").get("status") or {}
    return status if holds(status) else None
