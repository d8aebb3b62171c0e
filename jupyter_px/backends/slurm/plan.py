"""A topology as one Slurm job: its components (one per distinct resource shape) and which task
is which replica.

Replicas that share one shape (CPUs per task, memory per CPU, GPUs) make a homogeneous job;
roles or indices that differ (a parameter server with less memory than the workers, a per-index
override) make a heterogeneous job with one component per shape, in the order the shapes first
appear among the replicas (master, workers, ps, evaluator). One `srun` starts every component's
tasks together, and Slurm numbers them across components: component k's tasks have
`SLURM_PROCID` from its offset (the sum of the earlier components' tasks). So the task with
procid p is `tasks[p]` of the plan, whatever node it lands on.

Memory: a replica's memory limit (else its request) becomes `--mem-per-cpu` (rounded up per
CPU), never `--mem`, which is per node (tasks sharing a node would share it) and which Slurm
refuses to mix with `--mem-per-cpu` across components. Slurm enforces it per node and step
(cgroups); a task killed for it is reported OOMKilled. CPUs: the limit, else the request, rounded
up to whole CPUs (at least 1). GPUs: `--gres=<gres_name>:<n>` per task.

The plan (`plan.json` in the run directory) is what each task reads: standard library JSON, so
the task's entry needs neither pydantic nor the topology package.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ...topology import Topology

#: Frameworks whose launchers this backend does not start yet (an mpirun over srun-started hosts).
UNSUPPORTED_FRAMEWORKS = {"horovod": "Horovod", "mpi": "MPI"}


@dataclass(frozen=True)
class Shape:
    """What Slurm allocates to one task of a component."""

    cpus: int = 1
    mem_per_cpu_mib: int | None = None
    gpus: int = 0

    def describe(self) -> str:
        parts = [f"{self.cpus} CPU{'s' if self.cpus != 1 else ''}"]
        if self.mem_per_cpu_mib is not None:
            parts.append(f"{self.mem_per_cpu_mib * self.cpus} MiB")
        if self.gpus:
            parts.append(f"{self.gpus} GPU{'s' if self.gpus != 1 else ''}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Component:
    shape: Shape
    replicas: tuple[tuple[str, int], ...]
    offset: int  # the first task's SLURM_PROCID


@dataclass(frozen=True)
class JobPlan:
    components: tuple[Component, ...]
    tasks: tuple[tuple[str, int], ...] = field(default=())
    #: the run-level retry (`termination.max_retries`): times the job may be requeued
    max_retries: int = 0

    @property
    def heterogeneous(self) -> bool:
        return len(self.components) > 1

    def procid(self, role: str, index: int) -> int:
        return self.tasks.index((role, index))


def shape_of(resources: Any) -> Shape:
    """A replica's resources (the topology's, in cores / MiB / GPUs) as a Slurm task's shape."""
    cpu = resources.cpu
    cores = (cpu.limits if cpu.limits is not None else cpu.requests) if cpu is not None else None
    cpus = max(1, math.ceil(cores)) if cores else 1
    memory = resources.memory
    mib = (memory.limits if memory.limits is not None else memory.requests) if memory is not None else None
    mem_per_cpu = math.ceil(mib / cpus) if mib else None
    return Shape(cpus=cpus, mem_per_cpu_mib=mem_per_cpu, gpus=resources.gpus())


def job_plan(topology: Topology) -> JobPlan:
    """The components and task order of `topology`'s job (see the module's docstring)."""
    groups: dict[Shape, list[tuple[str, int]]] = {}
    for spec in topology.replicas():
        groups.setdefault(shape_of(spec.resources), []).append((spec.role, spec.index))
    components = []
    offset = 0
    for shape, replicas in groups.items():
        components.append(Component(shape, tuple(replicas), offset))
        offset += len(replicas)
    tasks = tuple(replica for component in components for replica in component.replicas)
    retries = topology.termination.max_retries if topology.termination else 0
    return JobPlan(tuple(components), tasks, retries)


def unsupported(topology: Topology) -> str | None:
    """Why this backend cannot run `topology` (one line), or None. What it cannot honour is
    refused, never dropped: a replica's restarts (the tasks of one Slurm step are not restarted
    one by one; a failed replica fails the run, as with `restart_policy: Never`)."""
    name = UNSUPPORTED_FRAMEWORKS.get(topology.framework or "")
    if name:
        return (
            f"framework {topology.framework}: {name} jobs are not supported on the Slurm backend yet "
            "(their launcher needs an mpirun over the job's nodes); use the local or kubeflow backend"
        )
    for spec in topology.replicas():
        if spec.restart_policy != "Never" and spec.max_restarts > 0:
            return (
                f"{spec.key}: restart_policy {spec.restart_policy} with max_restarts {spec.max_restarts}: the Slurm "
                "backend does not restart replicas (a failed replica fails the run); remove them, or use the local "
                "or a Kubernetes backend"
            )
    return None


def plan_document(
    topology: Topology, run_id: str, plan: JobPlan, rendezvous_timeout_s: float, checkpoint_grace_s: float = 90.0
) -> dict[str, Any]:
    """What every task reads (`plan.json`): the cluster's shape for `jupyter_px.cluster`, the
    task order, each replica's own environment, and the components' sizes (checked against
    Slurm's `SLURM_NTASKS_HET_GROUP_<k>`)."""
    env = {f"{spec.role}-{spec.index}": dict(spec.env) for spec in topology.replicas() if spec.env}
    return {
        "version": 1,
        "run_id": run_id,
        "framework": topology.framework,
        "tf_master_type": topology.environment.tf_master_type,
        "processes_per_replica": topology.environment.processes_per_replica,
        "roles": [{"role": role, "count": count} for role, count in topology.counts().items()],
        "tasks": [list(task) for task in plan.tasks],
        "components": [len(component.replicas) for component in plan.components],
        "env": env,
        "rendezvous_timeout_s": rendezvous_timeout_s,
        # the run-level retry: how often the job may be requeued (`requeue.py`)
        "max_retries": plan.max_retries,
        "checkpoint_grace_s": checkpoint_grace_s,
    }
