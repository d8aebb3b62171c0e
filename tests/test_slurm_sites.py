"""What a site enforces, on both site configurations of the test cluster (tests/slurm_cluster
`Site`): the project's own (cgroups constrain each step's memory, where cgroup v1 is usable here)
and an accounting-enforced one (no cgroups: `jobacct_gather/linux` samples every task's resident
memory and `OverMemoryKill` kills a step whose sum passes its limit; slurmdbd keeps accounting).
Both give a job that declares no memory `DefMemPerCPU=256` MiB per CPU.

The quickstart as it is in notebooks/quickstart.ipynb, a heterogeneous job whose worker runs out
of memory, and a replica over its limit on a node of its own: in every case the replica Slurm
killed is the one named, with what Slurm measured, and its peers are "stopped because" of it.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_cluster import SlurmCluster
from slurm_support import DEADLINE_S, gone, job_id, queued, started_cluster, use_slurm_fixture, wait_for  # noqa: F401

from jupyter_px.backends.slurm.default_memory import SlurmMemoryWarning
from jupyter_px.presentation.run_view import RunViewSource
from jupyter_px.presentation.text import status_rows
from jupyter_px.service import RunService, SourceText, Submission

pytestmark = pytest.mark.slurm

QUICKSTART = Path(__file__).parent.parent / "notebooks" / "quickstart.ipynb"


@pytest.fixture(scope="module", name="slurm_cluster", params=["own", "accounting-enforced"])
def site_cluster(request) -> Iterator[SlurmCluster]:
    """This module's cluster, once per site configuration."""
    with started_cluster(site=request.param) as cluster:
        yield cluster


def cgroups(cluster: SlurmCluster) -> bool:
    """Whether this cluster enforces memory with cgroups (else job accounting's OverMemoryKill)."""
    assert cluster.layout is not None
    return cluster.layout.cgroups


def quickstart() -> tuple[str, dict]:
    """The quickstart notebook's training cell (without its magic line) and its topology, on Slurm."""
    import yaml

    cells = ["".join(cell["source"]) for cell in json.loads(QUICKSTART.read_text())["cells"]]
    topology_cell = next(c for c in cells if c.startswith("%%px_topology"))
    code_cell = next(c for c in cells if c.startswith("%%px_distributed"))
    topology = yaml.safe_load(topology_cell.split("\n", 1)[1])
    return code_cell.split("\n", 1)[1], {**topology, "backend": "slurm"}


def test_the_quickstart_as_written(use_slurm, px_home):
    code, topology = quickstart()
    assert "memory" not in json.dumps(topology)  # it declares none: the partition's default applies
    service = RunService()
    with pytest.warns(SlurmMemoryWarning) as said:  # before anything is queued: one line, the setting named
        run_id = service.submit(Submission(SourceText(code), topology, name="quickstart"))
    assert [str(w.message) for w in said] == [
        "master-0, worker-0, worker-1 declare no memory: Slurm gives each 256 MiB (the cluster's DefMemPerCPU=256), "
        "below the ~300 MiB a PyTorch replica with gloo keeps resident; set resources.memory in the topology "
        "(memory: 1024 or more)"
    ]
    status = service.wait(run_id, timeout=DEADLINE_S)
    assert {r.memory_limit_mib for r in status.replicas} == {256}  # what the status shows of each
    logs = {key: service.log_tail(run_id, *key) for key in service.replicas(run_id)}
    if cgroups(use_slurm):
        # the cgroup charges the three PyTorch processes' shared pages once: 768 MiB is enough
        assert status.state.value == "Succeeded", (status.message, logs)
        assert all("sum of ranks = 3" in log for log in logs.values()), logs
        # what %px_status and the run view show of each replica's limit
        assert {row[-1] for row in status_rows(status)} == {"memory limit 256 MiB"}
        view = RunViewSource(service, run_id).view()
        assert {row.resources for row in view.replicas} == {"cpu 0.5–1, mem 256 MiB (default)"}
    else:
        # job accounting sums each process's resident memory (shared libraries counted three
        # times): over 768 MiB, slurmstepd kills the step on the node, every task of it
        assert status.state.value == "Failed", (status.message, logs)
        assert {r.reason for r in status.replicas} == {"OOMKilled"}, status.replicas
        said = status.replicas[0].message
        assert "killed by Slurm for memory on " in said and "(master-0, worker-0, worker-1) used " in said, said
        assert "over their limit of 768 MiB (job accounting, OverMemoryKill)" in said, said
        assert "no memory declared" in said and "set resources.memory" in said, said
        assert status.message.startswith("master-0 failed (OOMKilled): killed by Slurm for memory"), status.message
    gone(use_slurm, job_id(px_home, run_id))


#: Every replica joins gloo; worker-0 then takes memory until Slurm kills it, the others wait for it
#: in a barrier (they fail on their own, "Connection closed by peer", once it is gone).
HOG = """
import os, time
import torch.distributed as dist
dist.init_process_group("gloo")
me = f"{os.environ['PX_TASK_TYPE']}-{os.environ['PX_TASK_INDEX']}"
print(f"{me}: joined", flush=True)
if me == "worker-0":
    hoard = []
    for _ in range(75):  # 1.5 GiB at most, 200 MiB a second: job accounting samples each second
        chunk = bytearray(20 * 2**20)
        chunk[::4096] = b"x" * len(chunk[::4096])
        hoard.append(chunk)
        time.sleep(0.1)
dist.barrier()
"""


def test_a_heterogeneous_job_names_the_worker_slurm_killed_not_the_master(use_slurm, px_home):
    # 400 MiB a worker: torch and gloo keep some 300 MiB resident, and job accounting sums the two
    # workers of a node against their summed limit: at 300 each, they were killed at 601 MiB on a
    # loaded machine before either had joined (ci69); worker-0's hoard still passes 400 at once
    master, worker = {"cpu": 1, "memory": 600}, {"cpu": 1, "memory": 400}
    topology = {
        "framework": "pytorch",
        "backend": "slurm",
        "environment": {"resources": master, "replicas": {"n_workers": 2, "default_worker": {"resources": worker}}},
    }
    service = RunService()
    with warnings.catch_warnings():
        warnings.simplefilter("error", SlurmMemoryWarning)  # memory declared: nothing to say
        run_id = service.submit(Submission(SourceText(HOG), topology, name="het-oom"))
    status = service.wait(run_id, timeout=DEADLINE_S + 120)
    replicas = {r.key: r for r in status.replicas}
    logs = {key: service.log_tail(run_id, *key) for key in service.replicas(run_id)}
    assert status.state.value == "Failed", (status.message, logs)
    assert status.message.startswith("worker-0 failed (OOMKilled): killed by Slurm for memory on "), status.message
    killed = replicas["worker-0"]
    assert killed.reason == "OOMKilled" and killed.exit_code == 137, killed
    if cgroups(use_slurm):  # the cgroup's own figures, from the task's record
        assert "over its cgroup's limit of " in killed.message and "(peak " in killed.message, killed.message
    else:  # slurmstepd's line: the step's summed RSS on the node against its limit
        assert " used " in killed.message and "(job accounting, OverMemoryKill)" in killed.message, killed.message
    assert replicas["master-0"].state.value == "Stopped", replicas["master-0"]
    assert replicas["master-0"].message == "stopped because worker-0 was OOMKilled"
    other = replicas["worker-1"]  # on worker-0's node, job accounting killed it with worker-0
    assert other.reason == "OOMKilled" or other.message == "stopped because worker-0 was OOMKilled", other
    assert all(": joined" in log for log in logs.values()), logs  # every replica had started
    gone(use_slurm, job_id(px_home, run_id))


OOM = """
import os, time
me = f"{os.environ['PX_TASK_TYPE']}-{os.environ['PX_TASK_INDEX']}"
if me == "worker-0":
    hoard = []
    for _ in range(75):
        chunk = bytearray(20 * 2**20)
        chunk[::4096] = b"x" * len(chunk[::4096])
        hoard.append(chunk)
        time.sleep(0.1)
print(f"{me}: waiting", flush=True)
time.sleep(120)
"""


def test_a_replica_over_its_memory_limit_is_oom_killed_and_its_peers_stopped(use_slurm, px_home):
    # 3 of a node's 4 CPUs each: one replica per node, so the step's part on worker-0's node is worker-0's alone
    each = {"cpu": 3, "memory": 300}
    topology = {
        "framework": "pytorch",
        "backend": "slurm",
        "environment": {"resources": each, "replicas": {"n_workers": 2, "default_worker": {"resources": each}}},
    }
    service = RunService()
    run_id = service.submit(Submission(SourceText(OOM), topology, name="oom"))
    status = service.wait(run_id, timeout=DEADLINE_S)
    replicas = {r.key: r for r in status.replicas}
    assert status.state.value == "Failed" and status.message.startswith("worker-0 failed (OOMKilled)"), status
    killed = replicas["worker-0"]
    assert killed.reason == "OOMKilled" and killed.exit_code == 137, killed
    assert "it declared 300 MiB" in killed.message, killed.message
    if cgroups(use_slurm):
        assert "over its cgroup's limit of 300 MiB" in killed.message, killed.message
    else:
        assert "its step's task there used " in killed.message and "over its limit of 300 MiB" in killed.message
    for key in ("master-0", "worker-1"):
        assert replicas[key].state.value == "Stopped" and replicas[key].reason == "StoppedByRun", replicas[key]
        assert replicas[key].message == "stopped because worker-0 was OOMKilled"
    gone(use_slurm, job_id(px_home, run_id))
