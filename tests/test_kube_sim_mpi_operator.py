"""The simulated mpi-operator (kubeflow.org/v2beta1 MPIJob, kubeflow/mpi-operator v0.6.0) against
its sources: the objects a 1-launcher-2-worker MPIJob (the upstream example
examples/v2beta1/pi/pi.yaml) gets, the conditions it writes, cleanPodPolicy and
launcherCreationPolicy; and the `kubeflow` backend running an MPI job on it end to end.

Tests of the objects step the controller by hand on a cluster without scheduler and kubelet (pods
stay Pending); tests of what it does as pods run and end let the whole simulation run real pods
(`live`), whose code waits for files the test creates where the test decides when they go on;
eviction, which no process can cause, goes through the kubelet's API."""

from __future__ import annotations

import base64
import copy
import time

import pytest
from kube_sim import Cluster
from kube_sim.events import reasons
from kube_sim.mpi_operator import MPIOperator
from kube_sim_support import backend_cluster, fresh_namespace, require_mpi_pods, wait_for

import jupyter_px
from jupyter_px.backends.base import BackendError
from jupyter_px.runstore.metrics import MetricsReader

pytestmark = pytest.mark.kube

#: kubeflow/mpi-operator v0.6.0 examples/v2beta1/pi/pi.yaml (resources left out).
PI = {
    "apiVersion": "kubeflow.org/v2beta1",
    "kind": "MPIJob",
    "metadata": {"name": "pi"},
    "spec": {
        "slotsPerWorker": 1,
        "runPolicy": {"cleanPodPolicy": "Running", "ttlSecondsAfterFinished": 60},
        "sshAuthMountPath": "/home/mpiuser/.ssh",
        "mpiReplicaSpecs": {
            "Launcher": {
                "replicas": 1,
                "template": {"spec": {"containers": [{
                    "image": "mpioperator/mpi-pi:openmpi", "name": "mpi-launcher",
                    "securityContext": {"runAsUser": 1000},
                    "command": ["mpirun"], "args": ["-n", "2", "/home/mpiuser/pi"]}]}},
            },
            "Worker": {
                "replicas": 2,
                "template": {"spec": {"containers": [{
                    "image": "mpioperator/mpi-pi:openmpi", "name": "mpi-worker",
                    "securityContext": {"runAsUser": 1000},
                    "command": ["/usr/sbin/sshd"], "args": ["-De", "-f", "/home/mpiuser/.sshd_config"]}]}},
            },
        },
    },
}  # fmt: skip


@pytest.fixture(scope="module")
def cluster():
    with Cluster(controllers=("gc",), mpi_operator=True) as sim:
        yield sim


@pytest.fixture
def ns(cluster, request):
    return fresh_namespace(cluster, request.node.name, "m")


def create(cluster, ns: str, body: dict | None = None, **spec) -> dict:
    body = copy.deepcopy(body or PI)
    body["spec"].update(spec)
    return cluster.api.create(cluster.api.resource("kubeflow.org", "v2beta1", "mpijobs"), body, ns)


def step(cluster) -> None:
    MPIOperator(cluster.api).reconcile_all()


def mpijob(cluster, ns: str, name: str = "pi") -> dict:
    return cluster.api.get(cluster.api.resource("kubeflow.org", "v2beta1", "mpijobs"), ns, name)


def conditions(cluster, ns: str) -> dict[str, dict]:
    return {c["type"]: c for c in (mpijob(cluster, ns).get("status") or {}).get("conditions") or []}


@pytest.fixture(scope="module")
def live():
    """mpi-operator with the scheduler, the Job controller and the kubelet: pods run."""
    with Cluster(mpi_operator=True, kubelet={"backoff_base": 0.2}) as sim:
        yield sim


@pytest.fixture
def live_ns(live, request):
    return fresh_namespace(live, request.node.name, "ml")


def waits_for(path) -> list[str]:
    """A command that waits until the file `path`, or `path`.$HOSTNAME, exists."""
    return ["sh", "-c", f'while [ ! -e "{path}" ] && [ ! -e "{path}.$HOSTNAME" ]; do sleep 0.05; done']


def live_pi(tmp_path, launcher_gate: str = "launcher", init_gate: bool = False) -> dict:
    """The pi example with commands this machine runs: workers wait (as sshd would), the
    launcher until its gate; with `init_gate`, each worker's init container waits for its own."""
    body = copy.deepcopy(PI)
    specs = body["spec"]["mpiReplicaSpecs"]
    specs["Launcher"]["template"]["spec"]["containers"][0].update(
        image="busybox", command=waits_for(tmp_path / launcher_gate), args=[]
    )
    worker = specs["Worker"]["template"]["spec"]
    worker["containers"][0].update(image="busybox", command=["sleep", "600"], args=[])
    if init_gate:
        worker["initContainers"] = [{"name": "gate", "image": "busybox", "command": waits_for(tmp_path / "worker")}]
    return body


def pod_named(cluster, ns: str, prefix: str) -> dict | None:
    return next((p for p in cluster.list("pods", ns) if p["metadata"]["name"].startswith(prefix)), None)


def phase_of(cluster, ns: str, prefix: str) -> str | None:
    pod = pod_named(cluster, ns, prefix)
    return pod["status"].get("phase") if pod else None


def env(container: dict) -> list[tuple[str, str | None]]:
    return [(e["name"], e.get("value")) for e in container.get("env") or []]


def test_a_1_launcher_2_worker_mpijob_gets_the_objects_of_mpi_operator_v0_6_0(cluster, ns):
    job = create(cluster, ns)
    step(cluster)
    owner = [{"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "name": "pi", "uid": job["metadata"]["uid"],
              "controller": True, "blockOwnerDeletion": True}]  # fmt: skip
    service = cluster.get("services", "pi", ns)
    assert service["metadata"]["labels"] == {"app": "pi"}
    assert service["metadata"]["ownerReferences"] == owner
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {
        "training.kubeflow.org/operator-name": "mpi-operator", "training.kubeflow.org/job-name": "pi"}  # fmt: skip

    config = cluster.get("configmaps", "pi-config", ns)
    assert config["metadata"]["labels"] == {"app": "pi"}
    assert config["data"] == {
        "hostfile": f"pi-worker-0.pi.{ns}.svc slots=1\npi-worker-1.pi.{ns}.svc slots=1\n",
        "discover_hosts.sh": "#!/bin/sh\n",  # no worker runs yet
    }

    secret = cluster.get("secrets", "pi-ssh", ns)
    assert secret["type"] == "kubernetes.io/ssh-auth" and secret["metadata"]["ownerReferences"] == owner
    assert base64.b64decode(secret["data"]["ssh-privatekey"]).startswith(b"-----BEGIN EC PRIVATE KEY-----\n")
    assert base64.b64decode(secret["data"]["ssh-publickey"]).startswith(b"ecdsa-sha2-nistp521 ")

    worker = cluster.get("pods", "pi-worker-1", ns)
    assert worker["metadata"]["labels"] == {
        "training.kubeflow.org/operator-name": "mpi-operator", "training.kubeflow.org/job-name": "pi",
        "training.kubeflow.org/job-role": "worker", "training.kubeflow.org/replica-index": "1"}  # fmt: skip
    assert worker["metadata"]["ownerReferences"] == owner
    spec = worker["spec"]
    assert (spec["hostname"], spec["subdomain"], spec["restartPolicy"]) == ("pi-worker-1", "pi", "Never")
    assert spec["dnsConfig"] == {"searches": [f"pi.{ns}.svc.cluster.local"]}
    container = spec["containers"][0]
    assert container["command"] == ["/usr/sbin/sshd"]  # the template's own
    assert env(container) == [("K_MPI_JOB_ROLE", "worker")]
    assert container["volumeMounts"] == [{"name": "ssh-auth", "mountPath": "/home/mpiuser/.ssh"}]
    assert spec["volumes"] == [
        {
            "name": "ssh-auth",
            "secret": {
                "secretName": "pi-ssh",
                "items": [
                    {"key": "ssh-privatekey", "path": "id_rsa"},
                    {"key": "ssh-publickey", "path": "id_rsa.pub"},
                    {"key": "ssh-publickey", "path": "authorized_keys"},
                ],
            },
        }
    ]  # fmt: skip  (no 0600: not /root/.ssh)

    launcher = cluster.get("jobs", "pi-launcher", ns)  # a batch/v1 Job, created at once (AtStartup)
    assert launcher["metadata"]["labels"] == {"app": "pi"} and launcher["metadata"]["ownerReferences"] == owner
    assert launcher["spec"]["ttlSecondsAfterFinished"] == 60
    template = launcher["spec"]["template"]
    assert {k: v for k, v in template["metadata"]["labels"].items() if k.startswith("training")} == {
        "training.kubeflow.org/operator-name": "mpi-operator", "training.kubeflow.org/job-name": "pi",
        "training.kubeflow.org/job-role": "launcher"}  # fmt: skip
    pod = template["spec"]
    assert (pod["hostname"], pod["subdomain"], pod["restartPolicy"]) == ("pi-launcher", "pi", "OnFailure")
    container = pod["containers"][0]
    assert env(container) == [
        ("K_MPI_JOB_ROLE", "launcher"),
        ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
        ("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
        ("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"),
        ("OMPI_MCA_orte_set_default_slots", "1"),
        ("NVIDIA_VISIBLE_DEVICES", None),
        ("NVIDIA_DRIVER_CAPABILITIES", None),
    ]
    assert [m["mountPath"] for m in container["volumeMounts"]] == ["/home/mpiuser/.ssh", "/etc/mpi"]
    assert pod["volumes"][1] == {"name": "mpi-job-config", "configMap": {"name": "pi-config", "items": [
        {"key": "hostfile", "path": "hostfile", "mode": 0o444},
        {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 0o555}]}}  # fmt: skip

    assert list(conditions(cluster, ns)) == ["Created"]
    assert conditions(cluster, ns)["Created"]["message"] == f"MPIJob {ns}/pi is created."
    assert "MPIJobCreated" in reasons(cluster.api, ns)


def test_the_ssh_key_pair_is_one_ecdsa_p521_pair():
    """The Secret's public key is the private key's (a real pair an image's sshd would accept)."""
    from kube_sim import ssh_keys

    private, public = ssh_keys.key_pair()
    der = base64.b64decode(b"".join(private.splitlines()[1:-1]))
    scalar = int.from_bytes(der[8 : 8 + ssh_keys.SIZE], "big")  # after SEQUENCE (30 81 nn), 02 01 01, 04 42
    x, y = ssh_keys.public_point(scalar)
    blob = base64.b64decode(public.split()[1])
    assert blob.endswith(b"\x04" + x.to_bytes(ssh_keys.SIZE, "big") + y.to_bytes(ssh_keys.SIZE, "big"))
    assert blob.startswith(b"\x00\x00\x00\x13ecdsa-sha2-nistp521\x00\x00\x00\x08nistp521")


def test_running_workers_are_discovered_and_the_job_runs_and_succeeds_with_its_launcher(live, live_ns, tmp_path):
    ns = live_ns
    create(live, ns, live_pi(tmp_path))
    wait_for(lambda: conditions(live, ns).get("Running"), "the MPIJob Running")
    assert conditions(live, ns)["Running"]["message"] == f"MPIJob {ns}/pi is running."
    assert live.get("configmaps", "pi-config", ns)["data"]["discover_hosts.sh"] == (
        f"#!/bin/sh\necho pi-worker-0.pi.{ns}.svc\necho pi-worker-1.pi.{ns}.svc\n"
    )
    counts = {"Launcher": {"active": 1}, "Worker": {"active": 2}}
    wait_for(lambda: mpijob(live, ns)["status"].get("replicaStatuses") == counts, "the replica counts")
    (tmp_path / "launcher").touch()  # the launcher ends, 0
    wait_for(lambda: (conditions(live, ns).get("Succeeded") or {}).get("status") == "True", "the MPIJob Succeeded")
    found = conditions(live, ns)
    assert found["Succeeded"]["reason"] == "MPIJobSucceeded"
    assert found["Succeeded"]["message"] == f"MPIJob {ns}/pi successfully completed."
    assert found["Running"]["status"] == "False"
    assert mpijob(live, ns)["status"]["completionTime"]
    # finished: cleanPodPolicy Running deletes the running workers
    wait_for(lambda: pod_named(live, ns, "pi-worker") is None, "the running workers deleted")


def test_a_failed_launcher_fails_the_job_with_the_jobs_reason_and_the_pods(live, live_ns, tmp_path):
    """The launcher's pod evicted (the kubelet's API: no process makes a pod Evicted), backoffLimit
    0: the launcher Job fails, and the MPIJob with its reason."""
    ns = live_ns
    body = live_pi(tmp_path)
    body["spec"]["runPolicy"] = {"cleanPodPolicy": "None", "backoffLimit": 0}
    create(live, ns, body)
    wait_for(lambda: phase_of(live, ns, "pi-launcher-") == "Running", "the launcher running")
    live.kubelet.evict(ns, pod_named(live, ns, "pi-launcher-")["metadata"]["name"])
    failed = wait_for(lambda: conditions(live, ns).get("Failed"), "the MPIJob Failed")
    assert failed["reason"] == "BackoffLimitExceeded/Evicted"
    assert failed["message"] == "Job has reached the specified backoff limit: The node was low on resource: memory. "
    time.sleep(1)  # the controller's next passes: cleanPodPolicy None, the workers stay
    assert {"pi-worker-0", "pi-worker-1"} <= {p["metadata"]["name"] for p in live.list("pods", ns)}


def test_wait_for_workers_ready_holds_the_launcher_back(live, live_ns, tmp_path):
    ns = live_ns
    body = live_pi(tmp_path, init_gate=True)
    body["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    create(live, ns, body)
    wait_for(lambda: phase_of(live, ns, "pi-worker-1") == "Pending" and phase_of(live, ns, "pi-worker-0") == "Pending",
             "the workers waiting in their init containers")  # fmt: skip
    (tmp_path / "worker.pi-worker-0").touch()
    wait_for(lambda: phase_of(live, ns, "pi-worker-0") == "Running", "worker 0 running")
    time.sleep(1)  # the controller's passes with one worker ready
    assert live.get("jobs", "pi-launcher", ns) is None
    (tmp_path / "worker.pi-worker-1").touch()
    wait_for(lambda: live.get("jobs", "pi-launcher", ns), "the launcher Job once both workers are ready")
    (tmp_path / "launcher").touch()


def test_an_invalid_mpijob_gets_a_validation_event_and_nothing_else(cluster, ns):
    body = copy.deepcopy(PI)
    body["spec"]["mpiReplicaSpecs"]["Worker"]["restartPolicy"] = "ExitCode"  # v1's, not v2beta1's
    create(cluster, ns, body)
    step(cluster)
    assert cluster.list("pods", ns) == [] and cluster.get("jobs", "pi-launcher", ns) is None
    events = [e for e in cluster.list("events", ns) if e["reason"] == "ValidationError"]
    assert len(events) == 1, events
    assert 'spec.mpiReplicaSpecs[Worker].restartPolicy: Unsupported value: "ExitCode"' in events[0]["message"]


# ---- the kubeflow backend on mpi-operator, end to end --------------------------------------------


@pytest.fixture(name="sim")
def sim_fixture(tmp_path, monkeypatch, px_home):
    with backend_cluster(tmp_path, monkeypatch, px_home, namespaces=("default",), mpi_operator=True) as cluster:
        yield cluster


def test_an_mpi_run_on_mpi_operator_stores_every_ranks_output_and_metrics(sim, px_home):
    """mpi-operator's launcher (a Job's pod labelled job-role `launcher`, no replica index) is the
    run's master-0; its real `mpirun` starts the ranks on the workers over ssh (their sshd), and
    its log holds every rank's output and `@px-metrics` lines."""
    require_mpi_pods(sim)
    code = (
        "import os\nfrom jupyter_px import tracking\n"
        "rank = int(os.environ['OMPI_COMM_WORLD_RANK'])\n"
        "print('hello from rank', rank, 'of', os.environ['OMPI_COMM_WORLD_SIZE'], os.environ.get('MY_SETTING'),"
        " flush=True)\n"
        "tracking.log_metrics(step=rank, loss=1.0 / (rank + 1))\n"
    )
    environment = {"env": {"MY_SETTING": "forwarded"}, "replicas": {"n_workers": 2}}
    run = jupyter_px.submit(code, {"framework": "horovod", "backend": "kubeflow", "environment": environment})
    job = sim.list("mpijobs")[0]
    assert job["apiVersion"] == "kubeflow.org/v2beta1"
    status = run.wait(timeout=180)
    assert status.state.value == "Succeeded", status
    text = run.logs("master", 0, tail=None)
    # the ranks run on the workers (over ssh): the topology's env reaches them through `-x`
    assert "hello from rank 0 of 2 forwarded" in text and "hello from rank 1 of 2 forwarded" in text, text
    reader = MetricsReader(run.paths)

    def losses():
        reader.poll()
        return sorted(reader.series("master-0", "loss").values)

    assert wait_for(lambda: len(losses()) == 2 and losses(), "the ranks' metrics") == [0.5, 1.0]
    conditions = {c["type"]: c["status"] for c in sim.get("mpijobs", job["metadata"]["name"])["status"]["conditions"]}
    assert conditions["Succeeded"] == "True"


@pytest.mark.parametrize("policy", ["ExitCode", "Always"])
def test_a_restart_policy_mpi_operator_refuses_is_refused_before_anything_is_created(sim, px_home, policy):
    """mpi-operator v2beta1 takes Never and OnFailure only (validation.go validRestartPolicies): an
    MPIJob with another would sit there with a ValidationError event, its pods never made."""
    topology = {
        "framework": "horovod",
        "backend": "kubeflow",
        "environment": {"restart_policy": policy, "max_restarts": 1, "replicas": {"n_workers": 1}},
    }
    with pytest.raises(BackendError, match=f"restart_policy {policy}.*mpi-operator"):
        jupyter_px.submit("print(1)\n", topology)
    assert sim.list("mpijobs") == [] and sim.list("configmaps") == []


def test_the_launcher_forwards_the_shared_run_directory_to_the_ranks():
    """Ranks started over ssh (mpi-operator's workers) have only what `-x` forwards: the shared
    volume's run directory too, or their metrics would go to the log instead of the volume."""
    from jupyter_px.backends.kubernetes.render import render_manifests
    from jupyter_px.backends.kubernetes.shared.settings import KubernetesSettings
    from jupyter_px.topology import parse_topology

    topology = parse_topology({"framework": "horovod", "environment": {"replicas": {"n_workers": 2}}})
    settings = KubernetesSettings(shared_claim="runs", shared_mount_path="/mnt/px", mpijob_version="v2beta1")
    _, job = render_manifests("kubeflow", topology, "run-1", "print(1)", {}, settings)
    command = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
    assert {command[i + 1] for i, arg in enumerate(command) if arg == "-x"} >= {"PX_SHARED_RUN_DIR", "PX_RUN_ID"}


def test_a_restart_policy_in_the_launchers_pod_template_is_overridden_with_a_warning(cluster, ns):
    """mpi_job_controller.go newLauncherPodTemplate: the replica's restartPolicy wins, and the
    controller says so in a Warning event (podTemplateRestartPolicyReason)."""
    body = copy.deepcopy(PI)
    body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["restartPolicy"] = "Always"
    create(cluster, ns, body)
    step(cluster)
    events = [e for e in cluster.list("events", ns) if e["reason"] == "SetPodTemplateRestartPolicy"]
    assert [(e["type"], e["message"]) for e in events] == [
        ("Warning", "Restart policy in pod template overridden by restart policy in replica spec")
    ]
    launcher = cluster.get("jobs", "pi-launcher", ns)
    assert launcher["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"  # the replica's default
