"""Topology + addresses -> the environment each replica's process gets.

Every backend gives training code the same variables (the environment contract, described in
docs/environment.md), so one script runs unchanged on this machine and on Kubernetes. Everything here is
a pure function of its arguments: the backends decide addresses and paths, this module decides
what the frameworks read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only annotations: this module is shipped into Kubernetes pods (standard library only)
    from .topology import Topology

#: Ports Kubeflow's operators use in a cluster; locally each replica gets a free port instead.
KUBERNETES_PORTS = {"tensorflow": 2222, "pytorch": 23456, "mxnet": 9091, "horovod": 2222, "mpi": 2222, None: 2222}

#: Our role names -> TF_CONFIG task types (the master is `chief` unless asked otherwise).
_TF_TYPES = {"worker": "worker", "ps": "ps", "evaluator": "evaluator"}
_DMLC_ROLES = {"master": "scheduler", "ps": "server", "worker": "worker"}

#: {role: ["host:port", ...]}, one address per index.
Addresses = Mapping[str, list[str]]


@dataclass(frozen=True)
class ReplicaPaths:
    """Where a replica writes; None fields are left out (no shared disk on Kubernetes)."""

    outputs: str | None = None
    tensorboard: str | None = None
    metrics: str | None = None
    params: str | None = None


def kubernetes_addresses(topology: Topology, run_id: str) -> dict[str, list[str]]:
    """Kubeflow's naming: `<run>-<role>-<index>` headless services, one fixed port."""
    port = KUBERNETES_PORTS[topology.framework]
    return {role: [f"{run_id}-{role}-{i}:{port}" for i in range(n)] for role, n in topology.counts().items()}


def local_addresses(
    topology: Topology, ports: Mapping[str, list[int]], host: str = "127.0.0.1"
) -> dict[str, list[str]]:
    """Addresses on this machine from the ports a backend reserved, one per replica."""
    addresses = {}
    for role, count in topology.counts().items():
        role_ports = list(ports.get(role, []))
        if len(role_ports) != count:
            raise ValueError(f"{role}: {count} replicas but {len(role_ports)} ports")
        addresses[role] = [f"{host}:{port}" for port in role_ports]
    return addresses


def _split(address: str) -> tuple[str, str]:
    host, _, port = address.rpartition(":")
    return host, port


def _leader(addresses: Addresses) -> str:
    """The rank-0 replica: the master, else worker 0 (a job without a master)."""
    return (addresses.get("master") or addresses["worker"])[0]


def tf_config(topology: Topology, role: str, index: int, addresses: Addresses) -> dict:
    """TF_CONFIG: the training cluster (the evaluator is not part of it) and this task."""
    master_type = topology.environment.tf_master_type
    cluster: dict[str, list[str]] = {}
    if addresses.get("master"):
        cluster[master_type] = list(addresses["master"])
    for ours in ("worker", "ps"):
        if addresses.get(ours):
            cluster[ours] = list(addresses[ours])
    task_type = master_type if role == "master" else _TF_TYPES[role]
    return {"cluster": cluster, "task": {"type": task_type, "index": index}, "environment": "cloud"}


def torch_rank(topology: Topology, role: str, index: int, absent: frozenset[int] = frozenset()) -> int:
    """Node rank: 0 for the master, index+1 for workers (index for a job without a master);
    workers `absent` from this attempt (elastic workers) are skipped, so ranks stay contiguous."""
    if role == "master":
        return 0
    return index - sum(1 for gone in absent if gone < index) + topology.replicas_section.n_masters


def torch_env(
    topology: Topology,
    role: str,
    index: int,
    addresses: Addresses,
    local_rank: int | None = None,
    absent: frozenset[int] = frozenset(),
) -> dict[str, str]:
    """torch.distributed's env:// variables plus Kubeflow's PET_* (torchrun/elastic) names.

    With processes_per_replica > 1 and `local_rank` given, each process gets its global RANK,
    LOCAL_RANK and the total WORLD_SIZE, as torchrun would give it. Workers `absent` from this
    attempt of an elastic run are not counted: the world is the replicas that take part.
    """
    host, port = _split(_leader(addresses))
    nodes = topology.total_replicas() - len(absent)
    nproc = topology.environment.processes_per_replica
    node_rank = torch_rank(topology, role, index, absent)
    env = {
        "MASTER_ADDR": host,
        "MASTER_PORT": port,
        "WORLD_SIZE": str(nodes),
        "RANK": str(node_rank),
        "PET_MASTER_ADDR": host,
        "PET_MASTER_PORT": port,
        "PET_NNODES": str(nodes),
        "PET_NODE_RANK": str(node_rank),
        "PET_NPROC_PER_NODE": str(nproc),
    }
    if local_rank is not None:
        env.update(
            WORLD_SIZE=str(nodes * nproc),
            RANK=str(node_rank * nproc + local_rank),
            LOCAL_RANK=str(local_rank),
            LOCAL_WORLD_SIZE=str(nproc),
            GROUP_RANK=str(node_rank),
        )
    return env


def mxnet_env(topology: Topology, role: str, addresses: Addresses) -> dict[str, str]:
    host, port = _split(addresses["master"][0])
    counts = topology.counts()
    return {
        "DMLC_ROLE": _DMLC_ROLES[role],
        "DMLC_PS_ROOT_URI": host,
        "DMLC_PS_ROOT_PORT": port,
        "DMLC_NUM_SERVER": str(counts.get("ps", 0)),
        "DMLC_NUM_WORKER": str(counts.get("worker", 0)),
    }


def mpi_hostfile(topology: Topology, addresses: Addresses) -> str:
    """OpenMPI hostfile: one `host slots=N` line per worker host (same host merged)."""
    slots: dict[str, int] = {}
    for address in addresses.get("worker", []):
        host, _ = _split(address)
        slots[host] = slots.get(host, 0) + topology.environment.processes_per_replica
    return "".join(f"{host} slots={n}\n" for host, n in slots.items())


def mpi_world_size(topology: Topology) -> int:
    return topology.counts().get("worker", 0) * topology.environment.processes_per_replica


class ClusterEnv:
    """The contract for every replica of one run, with the cluster-wide parts encoded once.

    TF_CONFIG and PX_CLUSTER hold every address, so encoding them per replica is quadratic in
    the cluster size; a 1,100-replica job would spend most of its submit time in json.dumps.
    """

    def __init__(self, topology: Topology, run_id: str, addresses: Addresses, absent: frozenset[int] = frozenset()):
        self.topology, self.run_id, self.addresses = topology, run_id, addresses
        #: Workers not in this attempt of an elastic run (`torch_env`).
        self.absent = absent
        self.counts = topology.counts()
        self.px_cluster = json.dumps({r: list(addresses.get(r, [])) for r in self.counts}, separators=(",", ":"))
        if topology.framework == "tensorflow":
            cluster = tf_config(topology, "master" if "master" in self.counts else "worker", 0, addresses)["cluster"]
            self._tf_cluster = json.dumps(cluster, separators=(",", ":"))

    def for_replica(
        self, role: str, index: int, paths: ReplicaPaths = ReplicaPaths(), local_rank: int | None = None
    ) -> dict[str, str]:
        topology = self.topology
        if index < 0 or index >= self.counts.get(role, 0):
            raise ValueError(f"this topology has no replica {role}[{index}] (it has {self.counts})")
        env: dict[str, str] = dict(topology.replica(role, index).env)
        framework = topology.framework
        if framework == "tensorflow":
            task_type = topology.environment.tf_master_type if role == "master" else _TF_TYPES[role]
            env["TF_CONFIG"] = (
                f'{{"cluster":{self._tf_cluster},"task":{{"type":"{task_type}","index":{index}}},"environment":"cloud"}}'
            )
        elif framework == "pytorch":
            env.update(torch_env(topology, role, index, self.addresses, local_rank, self.absent))
        elif framework == "mxnet":
            env.update(mxnet_env(topology, role, self.addresses))
        elif framework in ("horovod", "mpi"):
            env["PX_MPI_WORLD_SIZE"] = str(mpi_world_size(topology))
        env.update(
            PX_RUN_ID=self.run_id,
            PX_TASK_TYPE=role,
            PX_TASK_INDEX=str(index),
            PX_CLUSTER=self.px_cluster,
            PX_FRAMEWORK=framework or "",
            PYTHONUNBUFFERED="1",
        )
        for name, value in (
            ("PX_OUTPUTS_PATH", paths.outputs),
            ("PX_TENSORBOARD_PATH", paths.tensorboard),
            ("PX_METRICS_PATH", paths.metrics),
            ("PX_PARAMS_PATH", paths.params),
        ):
            if value is not None:
                env[name] = value
        return env


def replica_env(
    topology: Topology,
    run_id: str,
    role: str,
    index: int,
    addresses: Addresses,
    paths: ReplicaPaths = ReplicaPaths(),
    local_rank: int | None = None,
) -> dict[str, str]:
    """The whole environment contract for one replica (without the inherited OS environment).

    For many replicas of one run, build one `ClusterEnv` and call `for_replica` on it.
    """
    return ClusterEnv(topology, run_id, addresses).for_replica(role, index, paths, local_rank)


def kubernetes_dns_addresses(
    topology: Topology,
    base: str,
    namespace: str,
    *,
    subdomain: str | None = None,
    role_names: Mapping[str, str] | None = None,
) -> dict[str, list[str]]:
    """Cluster DNS addresses of every replica, one fixed port per framework.

    With `subdomain` (one headless Service per run, pods with hostname + subdomain, as JobSet
    does): `<base>-<role>-<i>.<subdomain>.<namespace>.svc:<port>`. Without: a Service per
    replica, as Kubeflow's training operator creates them: `<base>-<role>-<i>.<namespace>.svc:<port>`.
    `role_names` maps our roles to the names in the objects (`master` -> `chief` for a TFJob).
    """
    port = KUBERNETES_PORTS[topology.framework]
    domain = f"{subdomain}.{namespace}.svc" if subdomain else f"{namespace}.svc"
    names = role_names or {}
    return {
        role: [f"{base}-{names.get(role, role)}-{i}.{domain}:{port}" for i in range(n)]
        for role, n in topology.counts().items()
    }
