"""The simulated training-operator against examples from its v1.9.0 sources and tests: the pods,
services, labels and env it creates, cleanPodPolicy, backoffLimit and the conditions it writes.
Tests of the objects it makes step it by hand without a kubelet (pods stay Pending); tests of what
it does as pods run, end and fail let the scheduler and kubelet run real pods (`live`), whose
code waits for a file the test creates where the test decides when it goes on; eviction, which no
process can cause, goes through the kubelet's API."""

from __future__ import annotations

import time
from pathlib import Path

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


def replica(
    replicas: int, image: str = "pytorch/pytorch:2.4", restart: str | None = None, command: list[str] | None = None
) -> dict:
    container = {"name": "pytorch", "image": image, "command": command or ["python", "-c", "print(1)"]}
    spec = {"replicas": replicas, "template": {"spec": {"containers": [container]}}}
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


@pytest.fixture(scope="module")
def live():
    """The whole simulation: the operator, scheduler and kubelet act; tests watch."""
    with Cluster(kubelet={"backoff_base": 0.2}) as sim:
        yield sim


@pytest.fixture
def live_ns(live, request):
    return fresh_namespace(live, request.node.name, "l")


def gated(gate: Path, code: int = 0, runs: int = 1) -> list[str]:
    """A container command: wait for the file `gate`, then exit `code` (with `runs` > 1: the first
    runs - 1 runs exit 1 at once, counted in the file `gate`.runs, as restarts of one container)."""
    script = (
        "import os, sys, time\n"
        f"count = {str(gate)!r} + '.' + os.environ['HOSTNAME']\n"
        "n = int(open(count).read()) if os.path.exists(count) else 0\n"
        "open(count, 'w').write(str(n + 1)); print('run', n, flush=True)\n"
        f"if n < {runs - 1}: sys.exit(1)\n"
        f"while not os.path.exists({str(gate)!r}): time.sleep(0.05)\n"
        f"sys.exit({code})\n"
    )
    return ["python", "-c", script]


def job_status(cluster, ns: str, name: str = "job", plural: str = "pytorchjobs") -> dict:
    return cluster.api.get(cluster.api.resource("kubeflow.org", "v1", plural), ns, name).get("status") or {}


def condition(cluster, ns: str, kind: str, name: str = "job", plural: str = "pytorchjobs") -> dict | None:
    found = [c for c in job_status(cluster, ns, name, plural).get("conditions") or [] if c["type"] == kind]
    return found[0] if found and found[0]["status"] == "True" else None


def running(cluster, ns: str, *names: str) -> bool:
    phases = {p["metadata"]["name"]: p["status"].get("phase") for p in cluster.list("pods", ns)}
    return all(phases.get(n) == "Running" for n in names)


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


def test_success_of_the_master_completes_the_job_and_clean_pod_policy_none_keeps_pods(live, live_ns, tmp_path):
    ns, master_gate, worker_gate = live_ns, tmp_path / "master", tmp_path / "worker"
    pytorchjob(live, ns, Master=replica(1, command=gated(master_gate)), Worker=replica(1, command=gated(worker_gate)))
    wait_for(lambda: running(live, ns, "job-master-0", "job-worker-0"), "both pods running")
    wait_for(lambda: condition(live, ns, "Running"), "the job Running")
    assert [c["type"] for c in job_status(live, ns)["conditions"]] == ["Created", "Running"]
    master_gate.touch()  # the master ends, 0
    wait_for(lambda: condition(live, ns, "Succeeded"), "the job Succeeded with its master")
    status = job_status(live, ns)
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions == {"Created": "True", "Running": "False", "Succeeded": "True"}
    assert status["replicaStatuses"]["Master"]["succeeded"] == 1 and status["completionTime"]
    assert status["replicaStatuses"]["Master"]["selector"] == (
        "training.kubeflow.org/job-name=job,training.kubeflow.org/operator-name=pytorchjob-controller,"
        "training.kubeflow.org/replica-type=master"
    )
    time.sleep(1)  # the operator's next passes: cleanPodPolicy defaults to None, nothing is deleted
    assert sorted(pods(live, ns)) == ["job-master-0", "job-worker-0"] and running(live, ns, "job-worker-0")
    worker_gate.touch()


@pytest.mark.parametrize(("policy", "left"), [("All", []), ("Running", ["job-master-0"])])
def test_clean_pod_policy_on_a_finished_job(live, live_ns, tmp_path, policy, left):
    ns, master_gate, worker_gate = live_ns, tmp_path / "master", tmp_path / "worker"
    pytorchjob(live, ns, run_policy={"cleanPodPolicy": policy}, Master=replica(1, command=gated(master_gate)),
               Worker=replica(1, command=gated(worker_gate)))  # fmt: skip
    wait_for(lambda: running(live, ns, "job-master-0", "job-worker-0"), "both pods running")
    master_gate.touch()
    wait_for(lambda: condition(live, ns, "Succeeded"), "the job Succeeded")
    wait_for(lambda: sorted(pods(live, ns)) == left, f"the pods left by cleanPodPolicy {policy} to be {left}")


def test_backoff_limit_counts_restarts_across_all_pods_with_ge(live, live_ns, tmp_path):
    """The master fails once and the worker once, then both run (1 + 1 = 2 restarts < 3): the job
    goes on; the worker fails again (1 + 2 = 3 >= 3): Failed, and every pod goes."""
    ns = live_ns
    master = replica(1, restart="OnFailure", command=gated(tmp_path / "never", runs=2))
    # the worker: fails, then runs until the test's gate, then fails (its 2nd restart), then runs
    worker_code = (
        "import os, sys, time\n"
        f"count = {str(tmp_path / 'worker-runs')!r}\n"
        "n = int(open(count).read()) if os.path.exists(count) else 0\n"
        "open(count, 'w').write(str(n + 1))\n"
        "if n == 0: sys.exit(1)\n"
        f"while n == 1 and not os.path.exists({str(tmp_path / 'gate')!r}): time.sleep(0.05)\n"
        "if n == 1: sys.exit(1)\n"
        "time.sleep(600)\n"
    )
    worker = replica(1, restart="OnFailure", command=["python", "-c", worker_code])
    pytorchjob(live, ns, run_policy={"backoffLimit": 3}, Master=master, Worker=worker)

    def restarts() -> dict[str, int]:
        return {n: p["status"].get("containerStatuses", [{}])[0].get("restartCount", 0)
                for n, p in pods(live, ns).items() if p["status"].get("containerStatuses")}  # fmt: skip

    both = ("job-master-0", "job-worker-0")
    wait_for(
        lambda: restarts() == dict.fromkeys(both, 1) and running(live, ns, *both), "one restart each, both running"
    )
    time.sleep(1)  # the operator's passes over 2 restarts
    assert condition(live, ns, "Failed") is None
    (tmp_path / "gate").touch()
    failed = wait_for(lambda: condition(live, ns, "Failed"), "the job Failed at 3 restarts")
    assert failed["message"] == "Job job has failed because it has reached the specified backoff limit"
    assert failed["reason"] == "PyTorchJobFailed"
    wait_for(lambda: pods(live, ns) == {}, "every pod deleted")


def test_an_evicted_pod_under_on_failure_is_recreated(live, live_ns, tmp_path):
    """A pod that ended Failed (evicted by the node: no process can make a pod Failed under
    OnFailure) is deleted and made again, the job restarting (its Restarting condition gives way to
    Running in the same pass while the master runs, as UpdateJobStatus does: the event stays)."""
    ns = live_ns
    pytorchjob(live, ns, Master=replica(1, command=gated(tmp_path / "master")),
               Worker=replica(1, command=gated(tmp_path / "worker")))  # fmt: skip
    wait_for(lambda: running(live, ns, "job-master-0", "job-worker-0"), "both pods running")
    first = pods(live, ns)["job-worker-0"]["metadata"]["uid"]
    live.kubelet.evict(ns, "job-worker-0")
    wait_for(lambda: "PyTorchJobRestarting" in reasons(live.api, ns, "job"), "the job's Restarting event")
    wait_for(
        lambda: (pods(live, ns).get("job-worker-0") or {"metadata": {"uid": first}})["metadata"]["uid"] != first,
        "job-worker-0 made again",
    )
    wait_for(lambda: running(live, ns, "job-worker-0"), "the new job-worker-0 running")
    (tmp_path / "master").touch()
    (tmp_path / "worker").touch()


def test_never_restart_fails_the_job(live, live_ns, tmp_path):
    ns = live_ns
    pytorchjob(live, ns, Master=replica(1, restart="Never", command=gated(tmp_path / "master")),
               Worker=replica(1, restart="Never", command=["python", "-c", "raise SystemExit(1)"]))  # fmt: skip
    failed = wait_for(lambda: condition(live, ns, "Failed"), "the job Failed with its worker")
    assert failed["message"] == "PyTorchJob job is failed because 1 Worker replica(s) failed."
    (tmp_path / "master").touch()


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


def mpijob(cluster, ns: str, workers: int = 2, launcher_command: list[str] | None = None, **spec) -> dict:
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
            "mpiReplicaSpecs": {
                "Launcher": replica(1, launcher_command or ["mpirun", "-n", "4", "/home/pi"]),
                "Worker": replica(workers),
            },
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


def test_an_mpijob_follows_its_launcher(live, live_ns, tmp_path):
    """The launcher (after its kubectl-delivery init container) and a worker (`sleep 365d`) run:
    the job Running, the worker in discover_hosts.sh; the launcher ends 0: Succeeded."""
    ns = live_ns
    mpijob(live, ns, workers=1, launcher_command=gated(tmp_path / "launcher"))
    wait_for(lambda: condition(live, ns, "Running", "pi", "mpijobs"), "the MPIJob Running")
    config = live.api.get(live.api.resource("", "v1", "configmaps"), ns, "pi-config")
    assert config["data"]["discover_hosts.sh"] == "#!/bin/sh\necho pi-worker-0:2"
    (tmp_path / "launcher").touch()
    succeeded = wait_for(lambda: condition(live, ns, "Succeeded", "pi", "mpijobs"), "the MPIJob Succeeded")
    assert succeeded["message"] == f"MPIJob {ns}/pi successfully completed."
    running_condition = [c for c in job_status(live, ns, "pi", "mpijobs")["conditions"] if c["type"] == "Running"]
    assert running_condition[0]["status"] == "False"


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
