"""The environment contract, checked as data and against what the frameworks themselves parse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from free_ports import free_port

from jupyter_px.cluster import (
    ReplicaPaths,
    kubernetes_addresses,
    local_addresses,
    mpi_hostfile,
    replica_env,
    tf_config,
)
from jupyter_px.topology import parse_topology

TF = parse_topology("framework: tensorflow\nenvironment:\n  replicas: {n_workers: 2, n_ps: 1, n_evaluators: 1}\n")
TORCH = parse_topology("framework: pytorch\nenvironment:\n  replicas: {n_workers: 2}\n")


def test_tf_config_cluster_and_task():
    addresses = kubernetes_addresses(TF, "run1")
    assert addresses["worker"] == ["run1-worker-0:2222", "run1-worker-1:2222"]
    config = json.loads(replica_env(TF, "run1", "worker", 1, addresses)["TF_CONFIG"])
    assert config == {
        "cluster": {
            "chief": ["run1-master-0:2222"],
            "worker": ["run1-worker-0:2222", "run1-worker-1:2222"],
            "ps": ["run1-ps-0:2222"],
        },
        "task": {"type": "worker", "index": 1},
        "environment": "cloud",
    }
    assert tf_config(TF, "master", 0, addresses)["task"] == {"type": "chief", "index": 0}
    assert tf_config(TF, "evaluator", 0, addresses)["task"] == {"type": "evaluator", "index": 0}


def test_tf_master_name_on_request_and_empty_roles_omitted():
    topology = parse_topology(
        "framework: tensorflow\nenvironment:\n  tf_master_type: master\n  replicas: {n_workers: 1}\n"
    )
    config = tf_config(topology, "master", 0, kubernetes_addresses(topology, "r"))
    assert config["cluster"] == {"master": ["r-master-0:2222"], "worker": ["r-worker-0:2222"]}
    assert config["task"]["type"] == "master"


def test_torch_ranks_and_pet_variables():
    addresses = local_addresses(TORCH, {"master": [5000], "worker": [5001, 5002]})
    master = replica_env(TORCH, "r", "master", 0, addresses)
    worker = replica_env(TORCH, "r", "worker", 1, addresses)
    assert {k: master[k] for k in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")} == {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "5000",
        "WORLD_SIZE": "3",
        "RANK": "0",
    }
    assert (worker["RANK"], worker["PET_NODE_RANK"], worker["PET_NNODES"], worker["PET_MASTER_PORT"]) == (
        "2",
        "2",
        "3",
        "5000",
    )
    assert kubernetes_addresses(TORCH, "r")["master"] == ["r-master-0:23456"]


def test_torch_processes_per_replica_give_global_ranks():
    topology = parse_topology(
        "framework: pytorch\nenvironment:\n  processes_per_replica: 2\n  replicas: {n_workers: 1}\n"
    )
    addresses = local_addresses(topology, {"master": [1], "worker": [2]})
    env = replica_env(topology, "r", "worker", 0, addresses, local_rank=1)
    assert (env["RANK"], env["LOCAL_RANK"], env["WORLD_SIZE"], env["PET_NPROC_PER_NODE"]) == ("3", "1", "4", "2")


def test_mxnet_dmlc_roles():
    topology = parse_topology("framework: mxnet\nenvironment:\n  replicas: {n_workers: 3, n_ps: 2}\n")
    addresses = kubernetes_addresses(topology, "mx")
    roles = {role: replica_env(topology, "mx", role, 0, addresses)["DMLC_ROLE"] for role in ("master", "ps", "worker")}
    assert roles == {"master": "scheduler", "ps": "server", "worker": "worker"}
    env = replica_env(topology, "mx", "worker", 2, addresses)
    assert (env["DMLC_PS_ROOT_URI"], env["DMLC_PS_ROOT_PORT"], env["DMLC_NUM_SERVER"], env["DMLC_NUM_WORKER"]) == (
        "mx-master-0",
        "9091",
        "2",
        "3",
    )


def test_mpi_hostfile_slots():
    topology = parse_topology(
        "framework: horovod\nenvironment:\n  processes_per_replica: 4\n  replicas: {n_workers: 2}\n"
    )
    assert mpi_hostfile(topology, kubernetes_addresses(topology, "h")) == "h-worker-0 slots=4\nh-worker-1 slots=4\n"
    local = local_addresses(topology, {"master": [1], "worker": [2, 3]})
    assert mpi_hostfile(topology, local) == "127.0.0.1 slots=8\n"
    assert replica_env(topology, "h", "master", 0, local)["PX_MPI_WORLD_SIZE"] == "8"


def test_our_variables_always_present():
    addresses = kubernetes_addresses(TF, "run1")
    paths = ReplicaPaths(outputs="/o", tensorboard="/tb/ps-0", metrics="/m/ps-0.jsonl", params="/p/ps-0.json")
    env = replica_env(TF, "run1", "ps", 0, addresses, paths)
    assert {
        k: env[k]
        for k in (
            "PX_RUN_ID",
            "PX_TASK_TYPE",
            "PX_TASK_INDEX",
            "PX_OUTPUTS_PATH",
            "PX_TENSORBOARD_PATH",
            "PYTHONUNBUFFERED",
        )
    } == {
        "PX_RUN_ID": "run1",
        "PX_TASK_TYPE": "ps",
        "PX_TASK_INDEX": "0",
        "PX_OUTPUTS_PATH": "/o",
        "PX_TENSORBOARD_PATH": "/tb/ps-0",
        "PYTHONUNBUFFERED": "1",
    }
    assert json.loads(env["PX_CLUSTER"]) == {role: addresses[role] for role in ("master", "worker", "ps", "evaluator")}
    assert "PX_METRICS_PATH" not in replica_env(TF, "run1", "ps", 0, addresses)  # no shared disk
    with pytest.raises(ValueError, match=r"no replica worker\[2\]"):
        replica_env(TF, "run1", "worker", 2, addresses)


def test_replica_env_carries_user_env():
    topology = parse_topology(
        "framework: pytorch\nenvironment:\n  env: {A: 1}\n"
        "  replicas:\n    n_workers: 1\n    worker: [{index: 0, env: {B: x}}]\n"
    )
    addresses = kubernetes_addresses(topology, "r")
    assert replica_env(topology, "r", "master", 0, addresses)["A"] == "1"
    assert replica_env(topology, "r", "worker", 0, addresses)["B"] == "x"


TF_RESOLVER = textwrap.dedent("""
    import json, os, sys
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    os.environ["TF_USE_LEGACY_KERAS"] = "1"  # no Keras 3 imported with TensorFlow
    import tensorflow as tf
    TFConfigClusterResolver = tf.distribute.cluster_resolver.TFConfigClusterResolver
    out = []
    for config in json.load(sys.stdin):
        os.environ["TF_CONFIG"] = config
        resolver = TFConfigClusterResolver()
        # The evaluator is not part of the training cluster (TF's convention), so it has no master URL.
        master = None if resolver.task_type == "evaluator" else resolver.master()
        out.append({"cluster": resolver.cluster_spec().as_dict(), "type": resolver.task_type, "id": resolver.task_id,
                    "master": master})
    print(json.dumps(out))
""")


@pytest.mark.jobs
def test_tensorflow_reads_our_tf_config_back():
    addresses = local_addresses(TF, {"master": [7000], "worker": [7001, 7002], "ps": [7003], "evaluator": [7004]})
    replicas = [(s.role, s.index) for s in TF.replicas()]
    configs = [replica_env(TF, "r", role, index, addresses)["TF_CONFIG"] for role, index in replicas]
    done = subprocess.run(
        [sys.executable, "-c", TF_RESOLVER], input=json.dumps(configs), capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-3000:]
    resolved = json.loads(done.stdout.strip().splitlines()[-1])
    cluster = {"chief": ["127.0.0.1:7000"], "worker": ["127.0.0.1:7001", "127.0.0.1:7002"], "ps": ["127.0.0.1:7003"]}
    expected_types = {"master": "chief", "worker": "worker", "ps": "ps", "evaluator": "evaluator"}
    for (role, index), result in zip(replicas, resolved, strict=False):
        assert result["cluster"] == cluster
        assert (result["type"], result["id"]) == (expected_types[role], index)
    assert resolved[0]["master"] == "127.0.0.1:7000"  # the chief serves the session itself


TORCH_RENDEZVOUS = textwrap.dedent("""
    import os, torch, torch.distributed as dist
    dist.init_process_group("gloo", init_method="env://")
    value = torch.tensor([float(dist.get_rank())])
    dist.all_reduce(value)
    print("RESULT", dist.get_rank(), dist.get_world_size(), int(value.item()), flush=True)
    dist.destroy_process_group()
    os._exit(0)
""")


@pytest.mark.jobs
@pytest.mark.parametrize("nproc", [1, 2])
def test_torch_env_rendezvous_with_gloo(nproc):
    """A real init_process_group(env://) over our variables: ranks and world size as torch sees them."""
    topology = parse_topology(
        f"framework: pytorch\nenvironment:\n  processes_per_replica: {nproc}\n  replicas: {{n_workers: {3 - nproc}}}\n"
    )
    ports = {"master": [free_port()], "worker": [free_port() for _ in range(3 - nproc)]}
    addresses = local_addresses(topology, ports)
    procs = []
    for spec in topology.replicas():
        for local_rank in range(nproc):
            env = dict(
                os.environ,
                **replica_env(
                    topology, "r", spec.role, spec.index, addresses, local_rank=local_rank if nproc > 1 else None
                ),
            )
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", TORCH_RENDEZVOUS],
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]
        results.append(next(line for line in out.splitlines() if line.startswith("RESULT")).split()[1:])
    world = 3 if nproc == 1 else 2 * nproc
    assert sorted(int(r[0]) for r in results) == list(range(world))
    assert {(int(r[1]), int(r[2])) for r in results} == {(world, sum(range(world)))}
