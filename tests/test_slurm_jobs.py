"""Real distributed jobs on a real Slurm cluster (tests/slurm_cluster: munged, slurmctld and three
slurmd nodes on this machine): PyTorch DDP across the three nodes, and a TensorFlow
parameter-server job submitted as a heterogeneous job whose parameter server has less memory
than its workers, with TF_CONFIG checked on every task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from slurm_support import (  # noqa: F401 (fixtures)
    DEADLINE_S,
    gone,
    job_id,
    slurm_cluster_fixture,
    topology_of,
    use_slurm_fixture,
)

from jupyter_px.processes import ports
from jupyter_px.runstore import RunStore
from jupyter_px.service import RunService, ScriptFile, SourceText, Submission

pytestmark = pytest.mark.slurm

JOBS = Path(__file__).parent / "jobs"


def test_pytorch_ddp_all_reduces_across_the_three_nodes(use_slurm, px_home):
    # 3 of a node's 4 CPUs per replica: Slurm can place only one replica per node
    topology = topology_of(cpu=3, memory=900)
    service = RunService()
    run_id = service.submit(Submission(ScriptFile(JOBS / "torch_ddp.py"), topology, name="ddp"))
    status = service.wait(run_id, timeout=DEADLINE_S)
    logs = {key: service.log_tail(run_id, *key) for key in service.replicas(run_id)}
    assert status.state.value == "Succeeded", (status.message, logs)

    outputs = RunStore().paths(run_id).outputs_dir
    results = {key: json.loads((outputs / f"{key[0]}-{key[1]}.json").read_text()) for key in logs}
    assert sorted(r["rank"] for r in results.values()) == [0, 1, 2]
    assert {r["world_size"] for r in results.values()} == {3}
    assert {r["allreduce"] for r in results.values()} == {0.0 + 1.0 + 2.0}  # every rank took part
    assert len({json.dumps(r["weights"]) for r in results.values()}) == 1  # DDP kept them identical
    nodes = {replica.address.split(":")[0] for replica in status.replicas}
    assert nodes == set(use_slurm.nodes), status.replicas  # one replica on each node
    assert {r.exit_code for r in status.replicas} == {0}
    gone(use_slurm, job_id(px_home, run_id))


def _recording_env(source: str) -> str:
    """`source` preceded by code that records what the task got: TF_CONFIG, its replica, its
    Slurm position and node."""
    return (
        "import json as _json, os as _os\n"
        "_key = f\"{_os.environ['PX_TASK_TYPE']}-{_os.environ['PX_TASK_INDEX']}\"\n"
        "_seen = {k: v for k, v in _os.environ.items() if k in ('TF_CONFIG', 'SLURM_PROCID', 'SLURMD_NODENAME')}\n"
        "with open(_os.path.join(_os.environ['PX_OUTPUTS_PATH'], f'env-{_key}.json'), 'w') as _f:\n"
        "    _json.dump(_seen, _f)\n" + source
    )


def test_tensorflow_parameter_server_as_a_heterogeneous_job(use_slurm, px_home):
    worker = {"cpu": 1, "memory": 1400}
    ps = {"cpu": 1, "memory": 700}  # less than the workers: a second component of the job
    topology = {
        "framework": "tensorflow",
        "backend": "slurm",
        "environment": {
            "resources": worker,
            "replicas": {
                "n_workers": 2,
                "n_ps": 1,
                "default_worker": {"resources": worker},
                "default_ps": {"resources": ps},
            },
        },
    }
    service = RunService()
    code = SourceText(_recording_env((JOBS / "tf_ps.py").read_text()), origin="tf_ps.py")
    run_id = service.submit(Submission(code, topology, name="tfps"))
    status = service.wait(run_id, timeout=DEADLINE_S + 120)
    logs = {key: service.log_tail(run_id, *key) for key in service.replicas(run_id)}
    assert status.state.value == "Succeeded", (status.message, logs)

    # the job Slurm ran: two components, the parameter server's with less memory per CPU
    job = job_id(px_home, run_id)
    components = [
        dict(token.split("=", 1) for token in line.split() if "=" in token)
        for line in use_slurm.run(["scontrol", "show", "job", "--oneliner", str(job)]).splitlines()
    ]
    assert [c["HetJobOffset"] for c in components] == ["0", "1"]
    assert [c["NumTasks"] for c in components] == ["3", "1"]
    assert [c["MinMemoryCPU"] for c in components] == ["1400M", "700M"]

    outputs = RunStore().paths(run_id).outputs_dir
    seen = {
        key: json.loads((outputs / f"env-{key}.json").read_text())
        for key in ("master-0", "worker-0", "worker-1", "ps-0")
    }
    configs = {key: json.loads(env["TF_CONFIG"]) for key, env in seen.items()}
    cluster = configs["master-0"]["cluster"]
    assert sorted(cluster) == ["chief", "ps", "worker"] and len(cluster["worker"]) == 2
    for key, config in configs.items():
        assert config["cluster"] == cluster, key  # one cluster, seen alike by every task
        role, index = key.split("-")
        assert config["task"] == {"type": "chief" if role == "master" else role, "index": int(index)}
    addresses = [*cluster["chief"], *cluster["worker"], *cluster["ps"]]
    assert all(address.startswith("127.0.0.1:") for address in addresses)  # the nodes' NodeAddr, not their names
    assert len(set(addresses)) == 4  # a port of its own for each task, though the nodes share this host
    below_the_kernels = ports.pool(ports.ephemeral_range())  # where no outgoing connection takes one
    assert all(int(address.rsplit(":", 1)[1]) in below_the_kernels for address in addresses), addresses
    # the task order: component 0 (chief, workers) first, then the parameter server
    assert [seen[key]["SLURM_PROCID"] for key in ("master-0", "worker-0", "worker-1", "ps-0")] == ["0", "1", "2", "3"]

    chief = json.loads((outputs / "chief.json").read_text())
    assert chief["steps"] == 6 and chief["counter"] == 6 and chief["workers"] == 2 and chief["ps"] == 1
    by_key = {r.key: r for r in status.replicas}
    assert by_key["master-0"].reason == "Completed" and by_key["master-0"].exit_code == 0
    for key in ("worker-0", "worker-1", "ps-0"):  # servers never end by themselves: the run stopped them
        assert by_key[key].state.value == "Succeeded" and by_key[key].reason == "StoppedByRun", by_key[key]
    gone(use_slurm, job)
