"""The simulated training-operator against examples from its v1.9.0 sources and tests: the pods,
services, labels and env it creates, cleanPodPolicy, backoffLimit and the conditions it writes.
Rule tests run without a kubelet (pods stay Pending: no processes); one end-to-end test runs a
small PyTorchJob for real."""

from __future__ import annotations

import pytest
from kube_sim import Cluster
from kube_sim.events import reasons
from kube_sim.gc import GarbageCollector
from kube_sim.training_operator import TrainingOperator
from kube_sim_support import fresh_namespace, wait_for

pytestmark = pytest.mark.kube  # the simulated cluster: HTTP servers, controllers, processes


@pytest.fixture(scope="module")
def cluster():
    """API server + garbage collector, no scheduler or kubelet (pods never get a node, so a delete
    removes them at once): the operator is stepped by hand."""
    with Cluster(controllers=("gc",)) as sim:
        yield sim


@pytest.fixture
def ns(cluster, request):
    return fresh_namespace(cluster, request.node.name, "o")


def replica(replicas: int, image: str = "pytorch/pytorch:2.4", restart: str | None = None, **container) -> dict:
    spec = {
        "replicas": replicas,
        "template": {
            "spec": {
                "containers": [
                    {"name": "pytorch", "image": image, "command": ["python", "-c", "print(1)"], **container}
                ]
            }
        },
    }
    if restart:
        spec["restartPolicy"] = restart
    return spec


def pytorchjob(cluster, ns: str, name: str = "job", run_policy: dict | None = None, **specs) -> dict:
    body = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": {"pytorchReplicaSpecs": specs, **({"runPolicy": run_policy} if run_policy else {})},
    }
    return cluster.api.create(cluster.api.resource("kubeflow.org", "v1", "pytorchjobs"), body, ns)


def step(cluster) -> None:
    TrainingOperator(cluster.api).reconcile_all()


def pods(cluster, ns: str) -> dict[str, dict]:
    return {p["metadata"]["name"]: p for p in cluster.api.list(cluster.api.resource("", "v1", "pods"), ns)["items"]}


def env(pod: dict, container: str = "pytorch") -> list[tuple[str, str]]:
    (found,) = [c for c in pod["spec"]["containers"] if c["name"] == container]
    return [(e["name"], e.get("value")) for e in found.get("env") or []]


def set_phase(cluster, ns: str, name: str, phase: str, exit_code: int | None = None, restarts: int = 0) -> None:
    """What a kubelet would report (these tests run without one)."""
    status = {
        "phase": phase,
        "containerStatuses": [
            {
                "name": "pytorch",
                "restartCount": restarts,
                "ready": phase == "Running",
                "state": {"running": {}}
                if exit_code is None
                else {"terminated": {"exitCode": exit_code, "reason": "Error" if exit_code else "Completed"}},
            }
        ],
    }
    cluster.api.update(
        cluster.api.resource("", "v1", "pods"), {"metadata": {"name": name}, "status": status}, ns, "status"
    )


def test_a_master_and_two_workers_get_the_upstream_pods_env_and_services(cluster, ns):
    job = pytorchjob(cluster, ns, Master=replica(1), Worker=replica(2))
    step(cluster)
    created = pods(cluster, ns)
    assert sorted(created) == ["job-master-0", "job-worker-0", "job-worker-1"]
    master = created["job-master-0"]
    assert master["metadata"]["labels"] == {
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/job-name": "job",
        "training.kubeflow.org/replica-type": "master",
        "training.kubeflow.org/replica-index": "0",
        "training.kubeflow.org/job-role": "master",
    }
    assert "training.kubeflow.org/job-role" not in created["job-worker-0"]["metadata"]["labels"]
    assert master["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "name": "job",
            "uid": job["metadata"]["uid"],
            "blockOwnerDeletion": True,
            "controller": True,
        }
    ]
    # envvar.go setPodEnv, in its order; WORLD_SIZE = replicas x nproc ("auto" counts 1)
    assert env(master) == [
        ("PYTHONUNBUFFERED", "1"),
        ("MASTER_PORT", "23456"),
        ("PET_MASTER_PORT", "23456"),
        ("MASTER_ADDR", "job-master-0"),
        ("PET_MASTER_ADDR", "job-master-0"),
        ("WORLD_SIZE", "3"),
        ("RANK", "0"),
        ("PET_NODE_RANK", "0"),
        ("PET_NPROC_PER_NODE", "auto"),
        ("PET_NNODES", "3"),
    ]
    assert [e for e in env(created["job-worker-1"]) if e[0] in ("RANK", "PET_NODE_RANK")] == [
        ("RANK", "2"),
        ("PET_NODE_RANK", "2"),
    ]
    assert master["spec"]["restartPolicy"] == "OnFailure"  # the replica's default
    assert master["spec"]["containers"][0]["ports"] == [
        {"name": "pytorchjob-port", "containerPort": 23456, "protocol": "TCP"}
    ]
    assert "initContainers" not in master["spec"]
    (init,) = created["job-worker-0"]["spec"]["initContainers"]
    assert (
        init["name"] == "init-pytorch"
        and init["image"] == "alpine:3.10"
        and "nslookup job-master-0" in init["command"][2]
    )
    services = {
        s["metadata"]["name"]: s for s in cluster.api.list(cluster.api.resource("", "v1", "services"), ns)["items"]
    }
    assert sorted(services) == ["job-master-0", "job-worker-0", "job-worker-1"]
    assert services["job-master-0"]["spec"]["clusterIP"] == "None"
    assert [(p["name"], p["port"]) for p in services["job-master-0"]["spec"]["ports"]] == [("pytorchjob-port", 23456)]
    assert services["job-master-0"]["spec"]["selector"]["training.kubeflow.org/replica-index"] == "0"
    status = cluster.api.get(cluster.api.resource("kubeflow.org", "v1", "pytorchjobs"), ns, "job")["status"]
    assert [c["type"] for c in status["conditions"]] == ["Created"]
    assert (
        status["conditions"][0]["reason"] == "PyTorchJobCreated"
        and status["conditions"][0]["message"] == "PyTorchJob job is created."
    )
    assert "job" in job["metadata"]["name"] and reasons(cluster.api, ns).count("SuccessfulCreatePod") == 3


def test_without_a_master_there_is_no_master_env(cluster, ns):
    pytorchjob(cluster, ns, Worker=replica(2))
    step(cluster)
    worker = pods(cluster, ns)["job-worker-0"]
    assert env(worker) == [("PYTHONUNBUFFERED", "1"), ("PET_NPROC_PER_NODE", "auto"), ("PET_NNODES", "2")]
    assert worker["metadata"]["labels"]["training.kubeflow.org/job-role"] == "master"  # IsMasterRole: worker 0
    assert "initContainers" not in worker["spec"]


def test_success_of_the_master_completes_the_job_and_clean_pod_policy_none_keeps_pods(cluster, ns):
    pytorchjob(cluster, ns, Master=replica(1), Worker=replica(1))
    step(cluster)
    set_phase(cluster, ns, "job-master-0", "Running")
    set_phase(cluster, ns, "job-worker-0", "Running")
    step(cluster)
    jobs = cluster.api.resource("kubeflow.org", "v1", "pytorchjobs")
    assert [c["type"] for c in cluster.api.get(jobs, ns, "job")["status"]["conditions"]] == ["Created", "Running"]
    set_phase(cluster, ns, "job-master-0", "Succeeded", 0)
    step(cluster)
    status = cluster.api.get(jobs, ns, "job")["status"]
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions == {"Created": "True", "Running": "False", "Succeeded": "True"}
    assert status["replicaStatuses"]["Master"]["succeeded"] == 1 and status["completionTime"]
    assert status["replicaStatuses"]["Master"]["selector"] == (
        "training.kubeflow.org/job-name=job,training.kubeflow.org/operator-name=pytorchjob-controller,"
        "training.kubeflow.org/replica-type=master"
    )
    step(cluster)
    assert sorted(pods(cluster, ns)) == ["job-master-0", "job-worker-0"]  # cleanPodPolicy defaults to None


@pytest.mark.parametrize(("policy", "left"), [("All", []), ("Running", ["job-master-0"])])
def test_clean_pod_policy_on_a_finished_job(cluster, ns, policy, left):
    pytorchjob(cluster, ns, run_policy={"cleanPodPolicy": policy}, Master=replica(1), Worker=replica(1))
    step(cluster)
    set_phase(cluster, ns, "job-worker-0", "Running")
    set_phase(cluster, ns, "job-master-0", "Succeeded", 0)
    step(cluster)  # Succeeded
    step(cluster)  # finished: clean up
    assert sorted(pods(cluster, ns)) == left


def test_backoff_limit_counts_restarts_across_all_pods_with_ge(cluster, ns):
    pytorchjob(cluster, ns, run_policy={"backoffLimit": 3}, Master=replica(1), Worker=replica(1))
    step(cluster)
    set_phase(cluster, ns, "job-master-0", "Running", restarts=1)
    set_phase(cluster, ns, "job-worker-0", "Running", restarts=1)
    step(cluster)
    jobs = cluster.api.resource("kubeflow.org", "v1", "pytorchjobs")
    assert not any(c["type"] == "Failed" for c in cluster.api.get(jobs, ns, "job")["status"]["conditions"])
    set_phase(cluster, ns, "job-worker-0", "Running", restarts=2)  # 1 + 2 = 3 >= 3
    step(cluster)
    status = cluster.api.get(jobs, ns, "job")["status"]
    failed = [c for c in status["conditions"] if c["type"] == "Failed"]
    assert failed[0]["message"] == "Job job has failed because it has reached the specified backoff limit"
    assert failed[0]["reason"] == "PyTorchJobFailed"
    assert pods(cluster, ns) == {}  # every pod goes


def test_a_failed_pod_under_on_failure_is_recreated(cluster, ns):
    pytorchjob(cluster, ns, Master=replica(1), Worker=replica(1))
    step(cluster)
    first = pods(cluster, ns)["job-worker-0"]["metadata"]["uid"]
    set_phase(cluster, ns, "job-worker-0", "Failed", 137)
    step(cluster)  # deletes it (unscheduled: at once), the job Restarting
    step(cluster)  # creates it again
    assert pods(cluster, ns)["job-worker-0"]["metadata"]["uid"] != first
    conditions = cluster.api.get(cluster.api.resource("kubeflow.org", "v1", "pytorchjobs"), ns, "job")["status"][
        "conditions"
    ]
    assert "Restarting" in [c["type"] for c in conditions]


def test_never_restart_fails_the_job(cluster, ns):
    pytorchjob(cluster, ns, Master=replica(1, restart="Never"), Worker=replica(1, restart="Never"))
    step(cluster)
    set_phase(cluster, ns, "job-worker-0", "Failed", 1)
    step(cluster)
    status = cluster.api.get(cluster.api.resource("kubeflow.org", "v1", "pytorchjobs"), ns, "job")["status"]
    failed = [c for c in status["conditions"] if c["type"] == "Failed"]
    assert failed[0]["message"] == "PyTorchJob job is failed because 1 Worker replica(s) failed."


def test_deleting_the_job_collects_its_pods_and_services(cluster, ns):
    pytorchjob(cluster, ns, Master=replica(1))
    step(cluster)
    cluster.api.delete(cluster.api.resource("kubeflow.org", "v1", "pytorchjobs"), ns, "job")
    GarbageCollector(cluster.api).sweep()
    assert pods(cluster, ns) == {}
    assert cluster.api.list(cluster.api.resource("", "v1", "services"), ns)["items"] == []


def test_tfjob_gets_tf_config_with_every_replica_type(cluster, ns):
    spec = lambda n: {"replicas": n, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf:2"}]}}}  # noqa: E731
    body = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "tf"},
        "spec": {"tfReplicaSpecs": {"Chief": spec(1), "Worker": spec(2), "PS": spec(1)}},
    }
    cluster.api.create(cluster.api.resource("kubeflow.org", "v1", "tfjobs"), body, ns)
    step(cluster)
    worker = pods(cluster, ns)["tf-worker-1"]
    (tf_config,) = [v for k, v in env(worker, "tensorflow") if k == "TF_CONFIG"]
    assert tf_config == (
        '{"cluster":{"chief":["tf-chief-0.' + ns + '.svc:2222"],"ps":["tf-ps-0.' + ns + '.svc:2222"],'
        '"worker":["tf-worker-0.' + ns + '.svc:2222","tf-worker-1.' + ns + '.svc:2222"]},'
        '"task":{"type":"worker","index":1},"environment":"cloud"}'
    )
    assert pods(cluster, ns)["tf-chief-0"]["metadata"]["labels"]["training.kubeflow.org/job-role"] == "master"
    assert worker["spec"]["restartPolicy"] == "Never"


def test_a_pytorchjob_runs_end_to_end(tmp_path):
    """Master + worker really run: the worker's init container waits for the master's name, both
    see the operator's env and reach each other; the job Succeeds."""
    with Cluster(kubelet={"backoff_base": 0.2}) as sim:
        if not sim.kubelet.isolated:
            pytest.skip(f"pods cannot resolve each other's names here: {sim.kubelet.not_isolated_because}")
        code = (
            "import os, socket, time\n"
            "rank = int(os.environ['RANK']); addr, port = os.environ['MASTER_ADDR'], int(os.environ['MASTER_PORT'])\n"
            "if rank == 0:\n"
            "    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
            "    s.bind(('0.0.0.0', port)); s.listen()\n"
            "    c, _ = s.accept(); print('master got', c.recv(20).decode(), 'world', os.environ['WORLD_SIZE'])\n"
            "else:\n"
            "    for _ in range(600):\n"
            "        try: c = socket.create_connection((addr, port)); break\n"
            "        except OSError: time.sleep(0.1)\n"
            "    c.sendall(f'rank {rank}'.encode()); print('worker sent')\n"
        )
        spec = {
            "replicas": 1,
            "template": {
                "spec": {"containers": [{"name": "pytorch", "image": "python:3.11", "command": ["python", "-c", code]}]}
            },
        }
        body = {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "e2e"},
            "spec": {"pytorchReplicaSpecs": {"Master": spec, "Worker": spec}},
        }
        jobs = sim.api.resource("kubeflow.org", "v1", "pytorchjobs")
        sim.api.create(jobs, body, "default")

        def finished():
            conditions = (sim.api.get(jobs, "default", "e2e").get("status") or {}).get("conditions") or []
            return next(
                (c["type"] for c in conditions if c["type"] in ("Succeeded", "Failed") and c["status"] == "True"), None
            )

        assert wait_for(finished, "the job to finish") == "Succeeded"
        master = sim.api.get(sim.api.resource("", "v1", "pods"), "default", "e2e-master-0")
        assert b"".join(sim.kubelet.logs(master, "pytorch", {})) == b"master got rank 1 world 2\n"


def mpijob(cluster, ns: str, workers: int = 2, **spec) -> dict:
    def replica(n: int, command: list[str] | None = None) -> dict:
        container = {"name": "mpi", "image": "mpioperator/mpi-pi:openmpi"}
        if command:
            container["command"] = command
        return {"replicas": n, "template": {"spec": {"containers": [container]}}}

    body = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MPIJob",
        "metadata": {"name": "pi"},
        "spec": {
            "slotsPerWorker": 2,
            "mpiReplicaSpecs": {"Launcher": replica(1, ["mpirun", "-n", "4", "/home/pi"]), "Worker": replica(workers)},
            **spec,
        },
    }
    return cluster.api.create(cluster.api.resource("kubeflow.org", "v1", "mpijobs"), body, ns)


def test_an_mpijob_gets_a_launcher_without_replica_index_and_a_hostfile(cluster, ns):
    mpijob(cluster, ns)
    step(cluster)
    created = pods(cluster, ns)
    assert sorted(created) == ["pi-launcher", "pi-worker-0", "pi-worker-1"]
    launcher = created["pi-launcher"]
    assert launcher["metadata"]["labels"] == {
        "training.kubeflow.org/operator-name": "mpijob-controller",
        "training.kubeflow.org/job-name": "pi",
        "training.kubeflow.org/replica-type": "launcher",
        "training.kubeflow.org/job-role": "master",
    }
    assert created["pi-worker-1"]["metadata"]["labels"]["training.kubeflow.org/replica-index"] == "1"
    assert env(launcher, "mpi") == [
        ("OMPI_MCA_plm_rsh_agent", "/etc/mpi/kubexec.sh"),
        ("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
        ("NVIDIA_VISIBLE_DEVICES", ""),
        ("NVIDIA_DRIVER_CAPABILITIES", ""),
        ("I_MPI_HYDRA_BOOTSTRAP", "rsh"),
        ("I_MPI_HYDRA_BOOTSTRAP_EXEC", "/etc/mpi/kubexec.sh"),
    ]
    assert launcher["spec"]["serviceAccountName"] == "pi-launcher" and launcher["spec"]["restartPolicy"] == "Never"
    assert [c["name"] for c in launcher["spec"]["initContainers"]] == ["kubectl-delivery"]
    assert created["pi-worker-0"]["spec"]["containers"][0]["command"] == ["sleep"]  # no command: sleep 365d
    config = cluster.api.get(cluster.api.resource("", "v1", "configmaps"), ns, "pi-config")
    assert config["data"]["hostfile"] == "pi-worker-0 slots=2\npi-worker-1 slots=2\n"
    assert config["data"]["kubexec.sh"].endswith('/opt/kube/kubectl exec ${POD_NAME} -- /bin/sh -c "$*"')
    assert config["data"]["discover_hosts.sh"] == "#!/bin/sh"  # no worker runs yet
    assert cluster.api.list(cluster.api.resource("", "v1", "services"), ns)["items"] == []
    role = cluster.api.get(cluster.api.resource("rbac.authorization.k8s.io", "v1", "roles"), ns, "pi-launcher")
    assert role["rules"][1]["resourceNames"] == ["pi-worker-0", "pi-worker-1"]


def test_an_mpijob_follows_its_launcher(cluster, ns):
    mpijob(cluster, ns, workers=1)
    step(cluster)
    set_phase(cluster, ns, "pi-worker-0", "Running")
    set_phase(cluster, ns, "pi-launcher", "Running")
    step(cluster)
    jobs = cluster.api.resource("kubeflow.org", "v1", "mpijobs")
    assert is_running(cluster.api.get(jobs, ns, "pi"))
    config = cluster.api.get(cluster.api.resource("", "v1", "configmaps"), ns, "pi-config")
    assert config["data"]["discover_hosts.sh"] == "#!/bin/sh\necho pi-worker-0:2"
    set_phase(cluster, ns, "pi-launcher", "Succeeded", 0)
    step(cluster)
    conditions = {c["type"]: c for c in cluster.api.get(jobs, ns, "pi")["status"]["conditions"]}
    assert conditions["Succeeded"]["message"] == f"MPIJob {ns}/pi successfully completed."
    assert conditions["Running"]["status"] == "False"


def is_running(job: dict) -> bool:
    return any(c["type"] == "Running" and c["status"] == "True" for c in job["status"]["conditions"])


def test_an_mxjob_gets_the_dmlc_env_and_mx_config(cluster, ns):
    spec = lambda n: {"replicas": n, "template": {"spec": {"containers": [{"name": "mxnet", "image": "mxnet:1"}]}}}  # noqa: E731
    body = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {"name": "mx"},
        "spec": {"jobMode": "MXTrain", "mxReplicaSpecs": {"Scheduler": spec(1), "Server": spec(1), "Worker": spec(2)}},
    }
    cluster.api.create(cluster.api.resource("kubeflow.org", "v1", "mxjobs"), body, ns)
    step(cluster)
    worker = pods(cluster, ns)["mx-worker-1"]
    values = dict(env(worker, "mxnet"))
    assert values["MX_CONFIG"] == (
        '{"cluster":{"scheduler":[{"url":"mx-scheduler-0","port":9091}],"server":[{"url":"mx-server-0","port":9091}],'
        '"worker":[{"url":"mx-worker-0","port":9091},{"url":"mx-worker-1","port":9091}]},'
        '"labels":{"scheduler":"","server":"","worker":""},"task":{"type":"worker","index":1}}'
    )
    assert {k: v for k, v in values.items() if k.startswith("DMLC_")} == {
        "DMLC_PS_ROOT_PORT": "9091",
        "DMLC_PS_ROOT_URI": "mx-scheduler-0",
        "DMLC_NUM_SERVER": "1",
        "DMLC_NUM_WORKER": "2",
        "DMLC_ROLE": "worker",
        "DMLC_USE_KUBERNETES": "1",
        "DMLC_WORKER_ID": "1",
    }
    assert pods(cluster, ns)["mx-server-0"]["metadata"]["labels"]["training.kubeflow.org/job-role"] == "master"
