"""What this machine can give a run, and which cores/GPUs each replica gets.

The local backend has no scheduler, so "resources" mean three concrete things:

* cpu: a replica limited to N cores is pinned (CPU affinity) to N of the cores this process may
  use. Replicas are spread round-robin over those cores so two 1-core replicas land on different
  cores when there are enough; on a small machine they overlap, which is fine (it only shares
  time, like an overcommitted Kubernetes node). A replica without a cpu setting may use every core.
* memory: enforced by watching RSS (see `memory.py`); here only the up-front check.
* gpu: the GPUs actually present (CUDA_VISIBLE_DEVICES if the caller set it, else `nvidia-smi -L`),
  handed out by CUDA_VISIBLE_DEVICES; a replica asking for none gets an empty value, so frameworks
  do not grab a GPU by default.

A request is what must be available: `requests`, or the limit where only a limit is given (the
Kubernetes rule). `check` refuses, before anything starts, a request that no single replica
could get here (naming the replica and the value) and a run whose memory requests or GPUs add up
to more than the machine has (memory cannot be time-shared, and a GPU is a device a replica
asked to have, as on Kubernetes). Cores may be shared, as said above.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache

from ...topology import ReplicaSpec, Topology
from ..base import ResourceUnavailable


@dataclass(frozen=True)
class Machine:
    """The capacity of this machine as this process sees it."""

    cpus: tuple[int, ...]
    memory_mib: float
    gpus: tuple[str, ...]


def usable_cpus() -> tuple[int, ...]:
    """Cores this process may run on (affinity, which containers and `taskset` narrow)."""
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return tuple(range(os.cpu_count() or 1))


def total_memory_mib() -> float:
    """Physical memory, or the cgroup's limit when that is lower (containers)."""
    import psutil

    total = psutil.virtual_memory().total
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path, encoding="ascii") as handle:
                text = handle.read().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total / 2**20


@lru_cache(maxsize=1)
def _nvidia_smi_gpus() -> tuple[str, ...]:
    executable = shutil.which("nvidia-smi")
    if not executable:
        return ()
    try:
        result = subprocess.run([executable, "-L"], capture_output=True, text=True, timeout=15, check=False)
    except (OSError, subprocess.SubprocessError):
        return ()
    if result.returncode != 0:
        return ()
    lines = [line for line in result.stdout.splitlines() if line.startswith("GPU ")]
    return tuple(str(i) for i in range(len(lines)))


def visible_gpus(environ: dict[str, str] | None = None) -> tuple[str, ...]:
    """GPU ids replicas may use: CUDA_VISIBLE_DEVICES's entries if set, else every GPU present."""
    env = os.environ if environ is None else environ
    if "CUDA_VISIBLE_DEVICES" in env:
        value = env["CUDA_VISIBLE_DEVICES"].strip()
        if value in ("", "-1", "NoDevFiles"):
            return ()
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return _nvidia_smi_gpus()


def this_machine() -> Machine:
    return Machine(cpus=usable_cpus(), memory_mib=total_memory_mib(), gpus=visible_gpus())


def requested(value_range) -> float | None:
    """What a `{requests, limits}` range needs up front: the request, else the limit."""
    if value_range is None:
        return None
    return value_range.requests if value_range.requests is not None else value_range.limits


def _fmt(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


def check(topology: Topology, machine: Machine | None = None) -> None:
    """Raise ResourceUnavailable naming every replica whose request this machine cannot meet."""
    machine = machine or this_machine()
    problems = []
    for spec in topology.replicas():
        res = spec.resources
        cpu = requested(res.cpu)
        if cpu is not None and cpu > len(machine.cpus):
            problems.append(
                f"{spec.key} requests {_fmt(cpu)} cpu cores, but this machine lets a run use "
                f"{len(machine.cpus)} (cores {list(machine.cpus)})"
            )
        memory = requested(res.memory)
        if memory is not None and memory > machine.memory_mib:
            problems.append(
                f"{spec.key} requests {_fmt(memory)} MiB of memory, but this machine has "
                f"{machine.memory_mib:.0f} MiB in total"
            )
        gpus = res.gpus()
        if gpus > len(machine.gpus):
            have = f"{len(machine.gpus)} ({', '.join(machine.gpus)})" if machine.gpus else "none"
            problems.append(
                f"{spec.key} requests {gpus} GPU{'s' if gpus != 1 else ''}, but the GPUs visible here are {have}"
            )
    if not problems:
        problems = _whole_run_problems(topology, machine)
    if problems:
        raise ResourceUnavailable("the local backend cannot run this topology: " + "; ".join(problems))


def _whole_run_problems(topology: Topology, machine: Machine) -> list[str]:
    """What the replicas need together: memory requests and GPUs add up, cores are shared."""
    specs = topology.replicas()
    memory = sum(requested(spec.resources.memory) or 0.0 for spec in specs)
    gpus = sum(spec.resources.gpus() for spec in specs)
    problems = []
    if memory > machine.memory_mib:
        problems.append(
            f"its {len(specs)} replicas request {_fmt(memory)} MiB of memory in all, but this machine "
            f"has {machine.memory_mib:.0f} MiB"
        )
    if gpus > len(machine.gpus):
        problems.append(
            f"its replicas request {gpus} GPU{'s' if gpus != 1 else ''} in all, but the GPUs visible "
            f"here are {len(machine.gpus)}"
        )
    return problems


@dataclass(frozen=True)
class Placement:
    """What one replica gets: cores to pin to (None: all), GPUs, the memory limit to enforce."""

    cpus: tuple[int, ...] | None
    gpus: tuple[str, ...]
    memory_limit_mib: float | None

    @property
    def cuda_visible_devices(self) -> str:
        return ",".join(self.gpus)

    def describe(self) -> str:
        """`cores [0, 1], gpus none, memory limit 512 MiB`: for the supervisor's log."""
        memory = f"{self.memory_limit_mib:.0f} MiB" if self.memory_limit_mib else "none"
        return (
            f"cores {list(self.cpus) if self.cpus else 'all'}, gpus {list(self.gpus) or 'none'}, memory limit {memory}"
        )


def cores_wanted(spec: ReplicaSpec) -> int | None:
    """Whole cores for a replica's cpu limit (else its request); None when it sets neither."""
    cpu = spec.resources.cpu
    if cpu is None:
        return None
    value = cpu.limits if cpu.limits is not None else cpu.requests
    if value is None:
        return None
    return max(1, math.ceil(value - 1e-9))


def place(specs: list[ReplicaSpec], machine: Machine) -> dict[tuple[str, int], Placement]:
    """Spread replicas over the cores and GPUs round-robin (overlapping when there are too few)."""
    placements: dict[tuple[str, int], Placement] = {}
    cpu_cursor = gpu_cursor = 0
    cores = machine.cpus
    for spec in specs:
        wanted = cores_wanted(spec)
        cpus = None
        if wanted is not None and cores and wanted < len(cores):
            cpus = tuple(sorted({cores[(cpu_cursor + k) % len(cores)] for k in range(wanted)}))
            cpu_cursor += wanted
        n_gpus = spec.resources.gpus()
        gpus: tuple[str, ...] = ()
        if n_gpus and machine.gpus:
            gpus = tuple(
                machine.gpus[(gpu_cursor + k) % len(machine.gpus)] for k in range(min(n_gpus, len(machine.gpus)))
            )
            gpu_cursor += n_gpus
        memory = spec.resources.memory
        placements[(spec.role, spec.index)] = Placement(cpus, gpus, memory.limits if memory is not None else None)
    return placements
