"""O(1) bytes per pod: the cluster lives once in the run's ConfigMap and each pod's entry point
builds the environment contract from it. The training code must see exactly what it saw when
every pod carried every address; the pods and the ConfigMap must not grow with the worker count;
`render | kubectl apply` output must be deletable by label and warn where client-side apply fails."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kubernetes_pod_env import DUMP_ENV, lay_out, manifest_env, pod_by_name, run_entry

from jupyter_px.backends.kubernetes.pod import entry as pod_entry
from jupyter_px.backends.kubernetes.render import (
    LAST_APPLIED_LIMIT,
    apply_warnings,
    render_manifests,
    to_yaml,
)
from jupyter_px.backends.kubernetes.shared.cluster_file import describe, role_pattern
from jupyter_px.backends.kubernetes.shared.names import LABEL_RUN
from jupyter_px.backends.kubernetes.shared.payload import STACKS_DIR
from jupyter_px.backends.kubernetes.shared.podspec import SHARED_DIR_ENV
from jupyter_px.backends.kubernetes.shared.settings import KubernetesSettings
from jupyter_px.cluster import ClusterEnv, kubernetes_dns_addresses
from jupyter_px.diagnostics.stack_signal import DUMPS_DIR_VARIABLE
from jupyter_px.topology import parse_topology

ROOT = Path(__file__).resolve().parents[1]
CODE = {"entrypoint": "train.py", "language": "python", "args": []}
POD_LIMIT = 16 * 1024

SMALL = {
    "tensorflow": {
        "framework": "tensorflow",
        "environment": {
            "replicas": {
                "n_workers": 3,
                "n_ps": 2,
                "n_evaluators": 1,
                # a replica's own env, and one that the contract overrides (as it always did)
                "default_worker": {"env": {"MY_FLAG": "1", "TF_CONFIG": "mine"}},
                "worker": [{"index": 2, "env": {"MY_FLAG": "2"}}],
            }
        },
    },
    "tensorflow-master": {
        "framework": "tensorflow",
        "environment": {"tf_master_type": "master", "replicas": {"n_workers": 2}},
    },
    "tensorflow-no-master": {
        "framework": "tensorflow",
        "environment": {"replicas": {"n_masters": 0, "n_workers": 2, "n_ps": 1}},
    },
    "pytorch-nproc": {
        "framework": "pytorch",
        "environment": {"processes_per_replica": 2, "replicas": {"n_workers": 2}},
    },
    "pytorch-no-master": {"framework": "pytorch", "environment": {"replicas": {"n_masters": 0, "n_workers": 3}}},
    "mxnet": {"framework": "mxnet", "environment": {"replicas": {"n_workers": 2, "n_ps": 1}}},
    "no-framework": {"environment": {"replicas": {}}},
}


def render(backend, topology, files=None, namespace="ml", run_id="demo-run"):
    files = files if files is not None else {"train.py": b"print('hello')\n"}
    return render_manifests(
        backend, parse_topology(topology), run_id, CODE, files, KubernetesSettings(), namespace=namespace
    )


def before(topology, run_id="demo-run", namespace="ml"):
    """What the previous renderer put in each native pod: the whole contract, per replica."""
    addresses = kubernetes_dns_addresses(topology, run_id, namespace, subdomain=run_id)
    return ClusterEnv(topology, run_id, addresses)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_native_pod_process_sees_the_environment_it_saw_before(name, tmp_path):
    """Every replica of a small run, through the shipped entry point in its own `python -S`
    process: the environment the training code reads is the one it read when the pod carried
    the whole contract (everything else the same: same entry point, same runner)."""
    topology = parse_topology(SMALL[name])
    objects = render("native", SMALL[name], files={"train.py": DUMP_ENV})
    configmap = objects[0]
    reference = before(topology)
    for spec in topology.replicas():
        pod = pod_by_name(objects, f"demo-run-{spec.role}-{spec.index}")
        items = pod["spec"]["volumes"][0]["configMap"]["items"]
        key = f"{spec.role}-{spec.index}"
        app, work = lay_out(configmap, tmp_path / key / "app", items), tmp_path / key / "work"
        now = run_entry(app, work, manifest_env(pod))
        # before: the old pod env, the same shipped files and paths, no cluster description
        # (and where the stack dumps go, which every pod's environment names since)
        (app / "run" / "cluster.json").unlink()
        old = run_entry(app, work, {**reference.for_replica(spec.role, spec.index), DUMPS_DIR_VARIABLE: STACKS_DIR})
        assert now == old, key
        for process_env in now.values():
            assert process_env["PX_CLUSTER"] == reference.px_cluster


@pytest.mark.parametrize("backend", ["kubeflow", "kubeflow-trainer"])
def test_operator_backends_pods_build_the_same_px_cluster(backend):
    """On the operators' backends the operator writes TF_CONFIG/MASTER_ADDR; our PX_CLUSTER (no
    longer in the templates) is built by the entry point, byte for byte what the template held."""
    topology = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 3}}}
    objects = render(backend, topology)
    description = json.loads(objects[0]["data"]["run.cluster.json"])
    assert "PX_CLUSTER" not in json.dumps(objects[1])
    built = pod_entry.cluster_contract(description, {})
    parsed = parse_topology(topology)
    if backend == "kubeflow":
        names = {"master": "master", "worker": "worker"}
        addresses = kubernetes_dns_addresses(parsed, "demo-run", "ml", role_names=names)
    else:
        nodes = [f"demo-run-node-0-{i}.demo-run.ml.svc:29500" for i in range(4)]  # the torch runtime's port
        addresses = {"master": nodes[:1], "worker": nodes[1:]}
    assert built == {"PX_CLUSTER": json.dumps(addresses, separators=(",", ":"))}


def test_role_pattern_is_lossless():
    assert role_pattern(["r1-worker-0.r1.ns.svc:2222", "r1-worker-1.r1.ns.svc:2222"]) == {
        "prefix": "r1-worker-",
        "first": 0,
        "suffix": ".r1.ns.svc:2222",
    }
    assert role_pattern(["j-node-0-5.j:1", "j-node-0-6.j:1"])["first"] == 5  # Trainer ranks go on
    odd = ["a-0:1", "b-1:1", "a-2:1"]
    assert role_pattern(odd) == {"addresses": odd}
    for addresses in (["only-3.ns:9"], [], ["h-9:1", "h-10:1", "h-11:1"], ["x-07:1", "x-08:1"], ["x-09:1", "x-10:1"]):
        described = {"roles": [{"role": "w", "count": len(addresses), **role_pattern(addresses)}]}
        assert pod_entry.expand_addresses(described) == {"w": addresses}


def test_describe_refuses_addresses_that_do_not_match_the_counts():
    topology = parse_topology({"framework": "pytorch", "environment": {"replicas": {"n_workers": 2}}})
    with pytest.raises(ValueError, match="worker: 2 replicas but 1 addresses"):
        describe(topology, "r", {"master": ["m:1"], "worker": ["w:1"]}, "full")


def _largest_pod(objects):
    pods = [o for o in objects if o["kind"] == "Pod"]
    return max(len(json.dumps(p)) for p in pods), max(len(yaml.safe_dump(p)) for p in pods[-3:])


def test_pods_and_configmap_do_not_grow_with_the_worker_count():
    """10,000 replicas (the topology's maximum: 1 master, 9,899 workers, 100 ps): every pod under
    16 KB and the ConfigMap as large as for a 10-worker run, give or take the digits."""
    big = {"framework": "tensorflow", "environment": {"replicas": {"n_workers": 9899, "n_ps": 100}}}
    small = {"framework": "tensorflow", "environment": {"replicas": {"n_workers": 9, "n_ps": 1}}}
    objects = render("native", big)
    assert sum(o["kind"] == "Pod" for o in objects) == 10_000
    json_bytes, yaml_bytes = _largest_pod(objects)
    assert json_bytes < POD_LIMIT and yaml_bytes < POD_LIMIT
    configmap_bytes = len(json.dumps(objects[0]))
    assert abs(configmap_bytes - len(json.dumps(render("native", small)[0]))) < 64
    assert configmap_bytes < 1024 * 1024 - 16 * 1024
    assert not apply_warnings(objects)
    torch = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 9999}}}
    for backend, topology in (("kubeflow", big), ("kubeflow", torch), ("kubeflow-trainer", torch)):
        job = render(backend, topology)[1]  # the operator copies a template into every pod
        assert len(json.dumps(job)) < POD_LIMIT, backend


def test_shared_volume_dir_still_reaches_the_pod():
    settings = KubernetesSettings(shared_claim="runs", shared_mount_path="/mnt/runs")
    objects = render_manifests("native", parse_topology(SMALL["mxnet"]), "demo-run", CODE, {"train.py": b""}, settings)
    env = manifest_env(pod_by_name(objects, "demo-run-worker-1"))
    assert env[SHARED_DIR_ENV] == "/mnt/runs/runs/demo-run"


@pytest.mark.parametrize("backend", ["native", "kubeflow", "kubeflow-trainer"])
def test_every_object_carries_the_run_label_and_the_header_says_how_to_delete(backend):
    topology = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 2}}}
    objects = render(backend, topology)
    for obj in objects:
        assert obj["metadata"]["labels"][LABEL_RUN] == "demo-run", obj["kind"]
    for template in _pod_templates(objects[1]):
        assert template["metadata"]["labels"][LABEL_RUN] == "demo-run"
    text = to_yaml(objects)
    kinds = ",".join(dict.fromkeys(o["kind"].lower() for o in objects))
    assert f"# delete: kubectl delete -n ml {kinds} -l {LABEL_RUN}=demo-run\n" in text.split("apiVersion", 1)[0]
    assert list(yaml.safe_load_all(text)) == objects


def _pod_templates(obj):
    """Every pod template inside a job (the operators copy its labels to the pods)."""
    if isinstance(obj, dict):
        if "template" in obj and isinstance(obj["template"], dict) and "spec" in obj["template"]:
            spec = obj["template"]["spec"]
            if "containers" in spec:
                yield obj["template"]
        for value in obj.values():
            yield from _pod_templates(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from _pod_templates(value)


def _render_cli(script: Path, topology: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "jupyter_px.cli", "render", str(script), "-f", str(topology)]
    return subprocess.run([*command, "--backend", "native"], capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_cli_warns_when_client_side_apply_cannot_annotate(tmp_path):
    """Code over 256 KiB makes a ConfigMap whose last-applied annotation the API server refuses:
    `jupyter px render` says so on stderr and suggests --server-side; the YAML is still printed."""
    script = tmp_path / "train.py"
    script.write_text("# " + "x" * (LAST_APPLIED_LIMIT + 10) + "\nprint('hi')\n")
    topology = tmp_path / "t.yaml"
    topology.write_text(yaml.safe_dump({"framework": "pytorch", "environment": {"replicas": {"n_workers": 1}}}))
    result = _render_cli(script, topology)
    assert result.returncode == 0, result.stderr
    assert "ConfigMap/train" in result.stderr and "--server-side" in result.stderr
    assert result.stdout.startswith("# jupyter-px run") and "kubectl apply --server-side -f FILE" in result.stdout
    small = tmp_path / "small.py"
    small.write_text("print('hi')\n")
    quiet = _render_cli(small, topology)
    assert quiet.returncode == 0 and quiet.stderr == ""
