"""Rendering: every manifest of every backend validates offline, for every framework.

Core objects (ConfigMap, Service, Pod) with kubernetes-validate --strict; Kubeflow jobs and
TrainJobs against the CRDs in ../shared/schemas (their pod templates strictly, as PodTemplates).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kubernetes_pod_env import prepared_env
from kubernetes_schemas import CRDS, crd_text, validate
from outside_data import shared_folder

from jupyter_px.backends.base import BackendError
from jupyter_px.backends.kubernetes.render import render_manifests, to_yaml
from jupyter_px.backends.kubernetes.shared.names import base_name, replica_name
from jupyter_px.backends.kubernetes.shared.payload import PayloadTooLarge
from jupyter_px.backends.kubernetes.shared.settings import KubernetesSettings, load_settings
from jupyter_px.topology import parse_topology

ROOT = Path(__file__).resolve().parents[1]
CODE = {"entrypoint": "train.py", "language": "python", "args": []}
FILES = {"train.py": b"print('hello')\n"}

GPU_RESOURCES = {
    "cpu": {"requests": 2, "limits": 4},
    "memory": {"requests": 1024, "limits": 4096},
    "gpu": {"limits": 1},
}

TOPOLOGIES = {
    "tensorflow-ps-evaluator": {
        "framework": "tensorflow",
        "environment": {
            "resources": GPU_RESOURCES,
            "replicas": {"n_workers": 3, "n_ps": 2, "n_evaluators": 1, "default_worker": {"resources": GPU_RESOURCES}},
        },
    },
    "pytorch-gpu-nproc": {
        "framework": "pytorch",
        "environment": {
            "processes_per_replica": 4,
            "resources": GPU_RESOURCES,
            "replicas": {"n_workers": 3, "default_worker": {"resources": GPU_RESOURCES}},
        },
    },
    "mxnet": {"framework": "mxnet", "environment": {"replicas": {"n_workers": 2, "n_ps": 1}}},
    "horovod-slots": {
        "framework": "horovod",
        "environment": {"processes_per_replica": 2, "replicas": {"n_workers": 2}},
    },
    "mpi": {"framework": "mpi", "environment": {"replicas": {"n_workers": 2}}},
}

#: Per-index overrides (polyaxon's `worker: [{index, resources}]`): only native can express them.
OVERRIDES = {
    "framework": "tensorflow",
    "environment": {
        "replicas": {
            "n_workers": 3,
            "default_worker": {"resources": {"cpu": {"requests": 1}}},
            "worker": [{"index": 2, "resources": {"gpu": {"limits": 2}, "memory": {"limits": "2Gi"}}}],
        }
    },
}

SUPPORTED = {
    "native": {"tensorflow-ps-evaluator", "pytorch-gpu-nproc", "mxnet"},
    "kubeflow": set(TOPOLOGIES),
    "kubeflow-trainer": {"pytorch-gpu-nproc", "horovod-slots", "mpi"},
}


def render(backend, topology, run_id="demo-run", settings=None, files=FILES):
    return render_manifests(backend, parse_topology(topology), run_id, CODE, files, settings or KubernetesSettings())


@pytest.mark.parametrize("copy", sorted(p.name for p in CRDS.glob("*.yaml*")))
def test_crd_copies_equal_their_reference(copy):
    """The CRDs validated against are byte for byte the workspace's reference copies."""
    name = copy.removesuffix(".gz")
    (reference,) = list(shared_folder("schemas").glob(f"*/{name}"))
    text = crd_text(copy) if copy.endswith(".gz") else (CRDS / copy).read_text()
    assert text == reference.read_text(), f"{copy} differs from {reference}"


@pytest.mark.parametrize("backend", sorted(SUPPORTED))
@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_every_manifest_validates(backend, name):
    if name not in SUPPORTED[backend]:
        with pytest.raises(BackendError) as error:
            render(backend, TOPOLOGIES[name])
        assert "use backend" in str(error.value)
        return
    objects = render(backend, TOPOLOGIES[name])
    assert objects[0]["kind"] == "ConfigMap"
    for obj in objects:
        validate(obj)
    # and the YAML a user would `kubectl apply` reads back to the same objects
    assert list(yaml.safe_load_all(to_yaml(objects))) == objects


def test_native_one_headless_service_and_contract_env():
    objects = render("native", TOPOLOGIES["tensorflow-ps-evaluator"], settings=KubernetesSettings(namespace="ml"))
    services = [o for o in objects if o["kind"] == "Service"]
    assert len(services) == 1
    service = services[0]["spec"]
    assert service["clusterIP"] == "None" and service["publishNotReadyAddresses"] is True
    pods = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Pod"}
    assert set(pods) == {
        "demo-run-master-0",
        "demo-run-worker-0",
        "demo-run-worker-1",
        "demo-run-worker-2",
        "demo-run-ps-0",
        "demo-run-ps-1",
        "demo-run-evaluator-0",
    }
    pod = pods["demo-run-worker-1"]
    assert pod["spec"]["hostname"] == "demo-run-worker-1" and pod["spec"]["subdomain"] == "demo-run"
    env = prepared_env(objects, "demo-run-worker-1")  # the pod's entry point builds TF_CONFIG
    tf_config = json.loads(env["TF_CONFIG"])
    assert tf_config["task"] == {"type": "worker", "index": 1}
    assert tf_config["cluster"]["chief"] == ["demo-run-master-0.demo-run.ml.svc:2222"]
    assert "evaluator" not in tf_config["cluster"]
    assert env["PX_TASK_TYPE"] == "worker" and env["PX_TASK_INDEX"] == "1" and env["PX_RUN_ID"] == "demo-run"
    resources = pod["spec"]["containers"][0]["resources"]
    assert resources == {
        "requests": {"cpu": "2", "memory": "1024Mi", "nvidia.com/gpu": "1"},
        "limits": {"cpu": "4", "memory": "4096Mi", "nvidia.com/gpu": "1"},
    }


def test_native_pytorch_env_uses_headless_dns():
    objects = render("native", TOPOLOGIES["pytorch-gpu-nproc"])
    env = prepared_env(objects, "demo-run-worker-2")
    assert env["MASTER_ADDR"] == "demo-run-master-0.demo-run.default.svc" and env["MASTER_PORT"] == "23456"
    assert env["RANK"] == "3" and env["WORLD_SIZE"] == "4" and env["PET_NPROC_PER_NODE"] == "4"


def test_native_per_index_overrides_are_kept():
    objects = render("native", OVERRIDES)
    for obj in objects:
        validate(obj)
    pods = {o["metadata"]["name"]: o["spec"]["containers"][0].get("resources") for o in objects if o["kind"] == "Pod"}
    assert pods["demo-run-worker-0"] == {"requests": {"cpu": "1"}}
    assert pods["demo-run-worker-2"] == {
        "requests": {"nvidia.com/gpu": "2"},
        "limits": {"memory": "2048Mi", "nvidia.com/gpu": "2"},
    }


def test_kubeflow_per_index_overrides_are_refused_naming_role_and_indices():
    with pytest.raises(BackendError) as error:
        render("kubeflow", OVERRIDES)
    message = str(error.value)
    assert message.startswith("environment.replicas.worker: indices 2 differ from worker[0] in resources")
    assert "backend native" in message


def test_trainer_refuses_replicas_that_differ():
    topology = {**OVERRIDES, "framework": "pytorch"}
    with pytest.raises(BackendError) as error:
        render("kubeflow-trainer", topology)
    assert str(error.value).startswith("worker-0, worker-1, worker-2 differ from master-0 in resources")


@pytest.mark.parametrize(
    ("framework", "mpijob_version", "backoff"),
    [("pytorch", "auto", None), ("tensorflow", "auto", None), ("horovod", "v1", None), ("horovod", "v2beta1", 0)],
)
def test_a_job_whose_replicas_never_restart_has_no_backoff_limit(framework, mpijob_version, backoff):
    """Past its backoffLimit the training operator deletes every pod of the job, the failed one and
    its log included (v1.9.0 common/job.go); without one (its default) a Never replica's failure
    fails the job and its pod stays. mpi-operator's launcher Job would retry 6 times without one."""
    topology = {"framework": framework, "environment": {"replicas": {"n_workers": 1}}}
    (_, job) = render("kubeflow", topology, settings=KubernetesSettings(mpijob_version=mpijob_version))
    assert job["spec"]["runPolicy"].get("backoffLimit") == backoff, job["spec"]["runPolicy"]
    assert job["spec"]["runPolicy"]["cleanPodPolicy"] == "None"


def test_kubeflow_tfjob_replica_types_run_policy_and_index_from_label():
    topology = dict(TOPOLOGIES["tensorflow-ps-evaluator"])
    topology["environment"] = {**topology["environment"], "restart_policy": "OnFailure", "max_restarts": 3}
    (cm, job) = render("kubeflow", topology, settings=KubernetesSettings(ttl_seconds_after_finished=600))
    validate(job)
    specs = job["spec"]["tfReplicaSpecs"]
    assert {k: v["replicas"] for k, v in specs.items()} == {"Chief": 1, "Worker": 3, "PS": 2, "Evaluator": 1}
    assert all(v["restartPolicy"] == "OnFailure" for v in specs.values())
    assert job["spec"]["runPolicy"] == {"cleanPodPolicy": "None", "backoffLimit": 4, "ttlSecondsAfterFinished": 600}
    container = specs["Worker"]["template"]["spec"]["containers"][0]
    assert container["name"] == "tensorflow"
    index_env = next(e for e in container["env"] if e["name"] == "PX_TASK_INDEX")
    assert index_env["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.labels['training.kubeflow.org/replica-index']"
    assert not any(e["name"] == "TF_CONFIG" for e in container["env"])  # the operator writes it


def test_kubeflow_kinds():
    kinds = {name: render("kubeflow", t)[1] for name, t in TOPOLOGIES.items()}
    assert kinds["mxnet"]["kind"] == "MXJob" and set(kinds["mxnet"]["spec"]["mxReplicaSpecs"]) == {
        "Scheduler",
        "Server",
        "Worker",
    }
    assert kinds["pytorch-gpu-nproc"]["spec"]["nprocPerNode"] == "4"
    mpi = kinds["horovod-slots"]
    assert mpi["kind"] == "MPIJob" and mpi["spec"]["slotsPerWorker"] == 2
    launcher = mpi["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    assert launcher["command"][:5] == ["mpirun", "--hostfile", "/etc/mpi/hostfile", "-np", "4"]


def test_kubeflow_elastic_workers_are_an_elastic_pytorchjob_the_crd_accepts():
    """`n_workers: "2:4"`: the master holds the rendezvous and counts in it (3:5 nodes), every
    container runs torchrun's agent over the entry point, each round on a store of its own."""
    replicas = {"n_workers": "2:4", "default_worker": {"restart_policy": "OnFailure", "max_restarts": 2}}
    topology = {"framework": "pytorch", "backend": "kubeflow", "environment": {"replicas": replicas}}
    objects = render("kubeflow", topology, run_id="elastic-run")
    for obj in objects:
        validate(obj)
    job = objects[1]
    assert job["spec"]["elasticPolicy"] == {
        "rdzvBackend": "c10d",
        "rdzvHost": "elastic-run-master-0",
        "rdzvPort": 23456,
        "rdzvId": "elastic-run",
        "minReplicas": 3,
        "maxReplicas": 5,
        "maxRestarts": 24,
    }
    assert job["spec"]["nprocPerNode"] == "1"  # not the operator's `auto`: a process per CPU
    specs = job["spec"]["pytorchReplicaSpecs"]
    assert (specs["Master"]["replicas"], specs["Worker"]["replicas"]) == (1, 4)
    for spec in specs.values():
        (container,) = spec["template"]["spec"]["containers"]
        torchrun = ["python", "-m", "torch.distributed.run", "/px/app/lib/px_entry.py", "/px/app/run"]
        assert container["command"] == torchrun
        assert {"name": "TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "value": "1"} in container["env"]

    replicas["default_worker"]["restart_policy"] = "Never"
    with pytest.raises(BackendError, match="set default_worker.restart_policy: OnFailure"):
        render("kubeflow", topology)


def test_kubeflow_without_framework_is_refused():
    with pytest.raises(BackendError, match="no framework"):
        render("kubeflow", {"environment": {}})


def test_trainer_torch_and_deepspeed():
    (_, job) = render("kubeflow-trainer", TOPOLOGIES["pytorch-gpu-nproc"])
    trainer = job["spec"]["trainer"]
    assert job["spec"]["runtimeRef"]["name"] == "torch-distributed"
    assert trainer["numNodes"] == 4 and trainer["numProcPerNode"] == 4
    assert trainer["resourcesPerNode"]["limits"]["nvidia.com/gpu"] == "1"
    (_, job) = render("kubeflow-trainer", TOPOLOGIES["mpi"], settings=KubernetesSettings(queue="team-a"))
    assert job["spec"]["runtimeRef"]["name"] == "deepspeed-distributed"
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
    jobs = job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert {j["name"] for j in jobs} == {"launcher", "node"}


@pytest.mark.parametrize("framework", ["tensorflow", "mxnet"])
def test_trainer_refuses_frameworks_without_runtime(framework):
    with pytest.raises(BackendError, match="no runtime for framework"):
        render("kubeflow-trainer", {"framework": framework, "environment": {"replicas": {"n_workers": 1}}})


def test_settings_reach_every_pod(tmp_path, monkeypatch):
    config = tmp_path / "k8s.yaml"
    config.write_text(
        "namespace: research\nimage: registry.example/train:1\nimage_pull_secrets: [regcred]\n"
        "service_account: trainer\ntolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]\n"
        "annotations: {team: vision}\ngpu_resource: amd.com/gpu\n"
    )
    monkeypatch.setenv("PX_K8S_CONFIG", str(config))
    monkeypatch.setenv("PX_K8S_QUEUE", "lq")
    monkeypatch.setenv("PX_K8S_LABELS", "cost-center=42")
    settings = load_settings()
    objects = render("native", TOPOLOGIES["pytorch-gpu-nproc"], settings=settings)
    for obj in objects:
        validate(obj)
        assert obj["metadata"]["namespace"] == "research"
        assert obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "lq"
        assert obj["metadata"]["labels"]["cost-center"] == "42"
        assert obj["metadata"]["annotations"] == {"team": "vision"}
    pod = objects[2]["spec"]
    assert pod["serviceAccountName"] == "trainer" and pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert pod["tolerations"][0]["key"] == "gpu"
    assert pod["containers"][0]["image"] == "registry.example/train:1"
    assert pod["containers"][0]["resources"]["limits"]["amd.com/gpu"] == "1"


def test_unknown_setting_is_an_error_naming_it(tmp_path, monkeypatch):
    config = tmp_path / "k8s.yaml"
    config.write_text("namepsace: x\n")
    monkeypatch.setenv("PX_K8S_CONFIG", str(config))
    with pytest.raises(BackendError, match="unknown setting 'namepsace'"):
        load_settings()


@pytest.mark.parametrize("typed", ["My Experiment #3", "2024-run", "a" * 80, "UPPER", "run.with.dots", "-x-", "résumé"])
def test_names_are_dns_1035_and_stable(typed):
    base = base_name(typed)
    assert base == base_name(typed)
    assert len(replica_name(base, "evaluator", 9999)) <= 63
    objects = render("native", {"framework": "pytorch", "environment": {"replicas": {"n_workers": 1}}}, run_id=base)
    for obj in objects:
        validate(obj)


def test_long_names_with_one_prefix_do_not_collide():
    assert base_name("x" * 50 + "a") != base_name("x" * 50 + "b")
    assert base_name("ok-name") == "ok-name"


def test_code_over_the_configmap_limit_is_refused_with_what_to_do():
    with pytest.raises(PayloadTooLarge, match="image|volume"):
        render("native", TOPOLOGIES["mxnet"], files={"train.py": b"#" * (1100 * 1024)})


def test_binary_pushed_values_travel_as_binary_data():
    objects = render("native", TOPOLOGIES["mxnet"], files={**FILES, "pushed.pkl": b"\x80\x04\x95\xff"})
    assert "code.pushed.pkl" in objects[0]["binaryData"]
    validate(objects[0])


def _render(script, topology, *options: str) -> subprocess.CompletedProcess:
    """`jupyter px render SCRIPT -f TOPOLOGY OPTIONS...` as a user runs it."""
    command = [sys.executable, "-m", "jupyter_px.cli", "render", str(script), "-f", str(topology), *options]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)


def test_cli_render_prints_yaml(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    topology = tmp_path / "t.yaml"
    topology.write_text(yaml.safe_dump(TOPOLOGIES["pytorch-gpu-nproc"]))
    result = _render(script, topology, "--backend", "kubeflow", "--name", "My Run")
    assert result.returncode == 0, result.stderr
    objects = list(yaml.safe_load_all(result.stdout))
    assert [o["kind"] for o in objects] == ["ConfigMap", "PyTorchJob"]
    assert objects[1]["metadata"]["name"] == base_name("My Run")
    assert objects[0]["data"]["code.train.py"] == "print('hi')\n"
    for obj in objects:
        validate(obj)
    assert _render(script, topology, "--backend", "kubeflow-trainer").returncode == 0  # pytorch on Trainer v2
    topology.write_text(yaml.safe_dump(TOPOLOGIES["mxnet"]))
    refused = _render(script, topology, "--backend", "kubeflow-trainer")
    assert refused.returncode == 2 and "no runtime for framework mxnet" in refused.stderr


def test_the_payload_runs_without_jupyter_px_installed(tmp_path):
    """Lay the ConfigMap out as the pod's volume would, run the entry point with `python -S`
    (no site-packages: no jupyter_px) as Trainer node 2 of 3: it is worker 1 and prints metrics."""
    import base64
    import os

    code = (
        b"import os\nimport jupyter_px.tracking as t\n"
        b"print('I am', os.environ['PX_TASK_TYPE'], os.environ['PX_TASK_INDEX'], os.environ['RANK'])\n"
        b"t.log_metrics(step=1, loss=0.5)\n"
    )
    topology = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 2}}}
    configmap, job = render("kubeflow-trainer", topology, files={"train.py": code})
    pod = job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
    app, work = tmp_path / "app", tmp_path / "work"
    work.mkdir()
    for item in pod["template"]["spec"]["template"]["spec"]["volumes"][0]["configMap"]["items"]:
        key, path = item["key"], app / item["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        data = configmap.get("data", {})
        path.write_bytes(data[key].encode() if key in data else base64.b64decode(configmap["binaryData"][key]))
    record = json.loads((app / "run" / "record.json").read_text())
    assert record["workdir"] == "/px/work"  # the pod's emptyDir; here a temporary directory
    record["workdir"] = str(work)
    (app / "run" / "record.json").write_text(json.dumps(record))
    env = {e["name"]: e["value"] for e in job["spec"]["trainer"]["env"]}
    env.update(
        PATH=os.environ["PATH"], PET_NODE_RANK="2", PET_NNODES="3", PET_MASTER_ADDR="node-0", PET_MASTER_PORT="23456"
    )
    result = subprocess.run(
        [sys.executable, "-S", str(app / "lib" / "px_entry.py"), str(app / "run")],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "I am worker 1 2"
    assert lines[1].startswith("@px-metrics ") and json.loads(lines[1].split(" ", 1)[1])["metrics"] == {"loss": 0.5}
