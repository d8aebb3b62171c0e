"""A topology placed on the hosts: which replica runs where, by slots.

Replicas are placed in start order (master, workers, ps, evaluator) on the hosts in their order,
each taking as many slots as it starts processes (`processes_per_replica`), a host filled before
the next is used, as `mpirun --map-by slot` and DeepSpeed's launcher fill a hostfile. A topology
that needs more slots than the hosts have is refused before anything starts, naming both counts.

The plan (`ssh/plan.json` in the run directory) is what the follower starts and what
`jupyter px render --backend ssh` shows: standard JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...topology import Topology
from ..base import BackendError
from .hosts import Host

#: Frameworks whose launchers this backend does not start (an mpirun over the hosts).
UNSUPPORTED_FRAMEWORKS = {"horovod": "Horovod", "mpi": "MPI"}


@dataclass(frozen=True)
class Placement:
    role: str
    index: int
    host: str
    #: the first of its slots on the host (0-based)
    slot: int

    @property
    def key(self) -> str:
        return f"{self.role}-{self.index}"


def place(topology: Topology, hosts: list[Host]) -> list[Placement]:
    """Each replica's host and first slot (see the module's docstring)."""
    width = max(1, topology.environment.processes_per_replica or 1)
    replicas = list(topology.replicas())
    capacity = sum(host.slots // width for host in hosts)
    if len(replicas) > capacity:
        have = ", ".join(f"{h.name} slots={h.slots}" for h in hosts)
        each = f" of {width} slots each" if width > 1 else ""
        raise BackendError(f"hosts: {len(replicas)} replicas{each} do not fit on {have} ({capacity} fit)")
    out: list[Placement] = []
    host_at, used = 0, 0
    for spec in replicas:
        while used + width > hosts[host_at].slots:
            host_at, used = host_at + 1, 0
        out.append(Placement(spec.role, spec.index, hosts[host_at].name, used))
        used += width
    return out


def unsupported(topology: Topology) -> str | None:
    """Why this backend cannot run `topology` (one line), or None: what it cannot honour is
    refused, never dropped (a replica's restarts: a failed replica fails the run)."""
    name = UNSUPPORTED_FRAMEWORKS.get(topology.framework or "")
    if name:
        return (
            f"framework {topology.framework}: {name} jobs are not supported on the ssh backend yet "
            "(their launcher is an mpirun over the hosts); use the local or kubeflow backend"
        )
    for spec in topology.replicas():
        if spec.restart_policy != "Never" and spec.max_restarts > 0:
            return (
                f"{spec.key}: restart_policy {spec.restart_policy} with max_restarts {spec.max_restarts}: the ssh "
                "backend does not restart replicas (a failed replica fails the run); remove them, or use the local "
                "or a Kubernetes backend"
            )
    return None


def plan_document(run_id: str, placements: list[Placement], hosts: list[Host]) -> dict[str, Any]:
    """`ssh/plan.json`: the replicas in start order with their host and slot, and the hosts."""
    return {
        "version": 1,
        "run_id": run_id,
        "replicas": [{"role": p.role, "index": p.index, "host": p.host, "slot": p.slot} for p in placements],
        "hosts": [{"host": h.name, "slots": h.slots, "address": h.address} for h in hosts],
    }
