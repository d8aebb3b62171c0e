"""What the Kubeflow operators need from the rendering, on the simulated cluster: the run is created
through the backend, the simulated operator and kubelet act, the test reads what the pods did."""

from __future__ import annotations

import pytest
from kube_sim_support import backend_cluster, wait_for
from kubernetes_support import DEADLINE_S
from test_kube_sim_backends import DDP

import jupyter_px
from jupyter_px.backends.kubernetes.shared.handle import RunHandle

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


def _pod(sim, name: str, namespace: str = "default") -> dict | None:
    return sim.get("pods", name, namespace)


def test_mpijob_workers_run_what_the_operator_starts_and_the_launcher_may_run_as_root(sim, px_home):
    """The training operator reaches MPI workers with `kubectl exec` and starts them as
    `sleep 365d` when the template has no command: a forced `sshd -De` fails on an image without
    sshd. OpenMPI's mpirun refuses to run as root unless told."""
    topology = {"framework": "mpi", "backend": "kubeflow", "environment": {"replicas": {"n_workers": 2}}}
    run = jupyter_px.submit("print('rank')\n", topology)
    (job,) = sim.list("mpijobs")
    name = job["metadata"]["name"]
    for index in range(2):
        worker = wait_for(
            lambda i=index: (p := _pod(sim, f"{name}-worker-{i}")) and p["status"].get("phase") != "Pending" and p,
            f"worker {index} to start",
        )
        assert worker["status"]["phase"] == "Running", worker["status"]
        assert worker["spec"]["containers"][0]["command"] == ["sleep"], worker["spec"]["containers"][0]
    launcher = wait_for(lambda: _pod(sim, f"{name}-launcher"), "the launcher")
    env = {e["name"]: e.get("value") for e in launcher["spec"]["containers"][0]["env"]}
    assert env["OMPI_ALLOW_RUN_AS_ROOT"] == env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"
    assert launcher["spec"]["serviceAccountName"] == f"{name}-launcher", "the operator's account (pods/exec)"
    run.stop()


@pytest.mark.parametrize("may_read_crds", [True, False])
def test_mpijob_on_a_cluster_whose_mpijobs_are_mpi_operators(tmp_path, monkeypatch, px_home, may_read_crds):
    """mpi-operator serves MPIJob as kubeflow.org/v2beta1 under the training operator's CRD name:
    preflight reads which version is served (from the CRD, or, where CRDs may not be read, by
    listing each version) and the job is rendered for it."""
    with backend_cluster(tmp_path, monkeypatch, px_home, mpi_operator=True) as sim:
        if not may_read_crds:
            sim.fail("GET", "customresourcedefinitions", 403, "Forbidden", "cannot get CRDs", times=100)
        topology = {"framework": "mpi", "backend": "kubeflow", "environment": {"replicas": {"n_workers": 2}}}
        run = jupyter_px.submit("print('rank')\n", topology)
        try:
            mpijobs = sim.api.resource("kubeflow.org", "v2beta1", "mpijobs")
            (job,) = sim.api.list(mpijobs, "default")["items"]
            assert job["apiVersion"] == "kubeflow.org/v2beta1"
            specs = job["spec"]["mpiReplicaSpecs"]
            assert specs["Launcher"]["template"]["spec"]["containers"][0]["command"][0] == "mpirun"
            assert "command" not in specs["Worker"]["template"]["spec"]["containers"][0], "mpi-operator starts sshd"
            assert job["spec"]["runPolicy"]["cleanPodPolicy"] == "None"  # the operators' default
        finally:
            run.stop()
        # the follower and stop read the job at the version it was created with, not at v1's
        # (where mpi-operator serves none: the follower took the job for deleted)
        handle = RunHandle.load(run.paths.root)
        assert (handle.job().group, handle.job().version) == ("kubeflow.org", "v2beta1")


def test_native_pods_pass_restricted_pod_security_by_default(sim, px_home, monkeypatch):
    """A namespace enforcing the `restricted` Pod Security Standard admits native's pods as
    rendered by default; with the setting off, admission refuses them with its reason."""
    namespaces = sim.api.resource("", "v1", "namespaces")
    labels = {"pod-security.kubernetes.io/enforce": "restricted"}
    sim.api.create(namespaces, {"metadata": {"name": "locked", "labels": labels}})
    monkeypatch.setenv("PX_K8S_NAMESPACE", "locked")
    topology = {"framework": "pytorch", "backend": "native", "environment": {"replicas": {"n_workers": 1}}}
    run = jupyter_px.submit("import os\nprint('world', os.environ['WORLD_SIZE'])\n", topology)
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Succeeded", status
    assert "world 2" in run.logs("worker", 0)
    monkeypatch.setenv("PX_K8S_RESTRICTED_SECURITY_CONTEXT", "false")
    with pytest.raises(Exception, match=r'violates PodSecurity "restricted:latest"'):
        jupyter_px.submit("pass\n", topology)


FAIL_FIRST = (
    "import sys\n"
    "with open('/px/work/attempts', 'a+') as f:\n"
    "    f.write('x'); f.seek(0); attempt = len(f.read())\n"
    "print('attempt', attempt, flush=True)\n"
    "sys.exit(1 if attempt <= {failures} else 0)\n"
)


@pytest.mark.parametrize(("failures", "outcome"), [(2, "Succeeded"), (3, "Failed")])
def test_max_restarts_on_kubeflow_lets_that_many_restarts_happen(sim, px_home, failures, outcome):
    """`max_restarts: 2` means two restarts, as locally: the third attempt runs. The operator
    fails a job once its pods' restarts reach backoffLimit (`>=`), so the limit is 3."""
    topology = {
        "framework": "pytorch",
        "backend": "kubeflow",
        "environment": {"restart_policy": "OnFailure", "max_restarts": 2, "replicas": {"n_workers": 0}},
    }
    run = jupyter_px.submit(FAIL_FIRST.format(failures=failures), topology)
    assert run.wait(timeout=DEADLINE_S).state.value == outcome
    (job,) = sim.list("pytorchjobs")
    condition = next(
        c for c in job["status"]["conditions"] if c["status"] == "True" and c["type"] in ("Succeeded", "Failed")
    )
    assert condition["type"] == outcome, job["status"]


def test_on_failure_with_no_restarts_allowed_is_not_restarted_on_native(sim, px_home):
    """`restart_policy: OnFailure` with `max_restarts: 0` means no restart, as locally; a pod
    whose policy is OnFailure is restarted by the kubelet without limit."""
    topology = {
        "framework": "pytorch",
        "backend": "native",
        "environment": {"restart_policy": "OnFailure", "max_restarts": 0, "replicas": {"n_workers": 0}},
    }
    run = jupyter_px.submit(FAIL_FIRST.format(failures=1), topology)
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Failed", status
    assert [r.restarts for r in status.replicas] == [0], status.replicas
    assert "attempt 1" in run.logs("master", 0) and "attempt 2" not in run.logs("master", 0)
