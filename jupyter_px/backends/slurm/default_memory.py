"""Memory a topology does not declare: what Slurm will give its replicas, and whether that is
enough for the framework they import.

A replica with no `resources.memory` gets the partition's default: `DefMemPerCPU` per CPU (or its
share of `DefMemPerNode`), from the partition (`scontrol show partition`) or the cluster
(`scontrol show config`). Many sites set a small one (256 MiB per CPU is common), and a replica
that imports a framework keeps more than that resident before it trains anything. Where the site
enforces memory by job accounting (`OverMemoryKill`), the step's tasks on a node are held to the
sum of their limits, counted as the sum of their resident sizes, so such a run is killed within
seconds; under cgroups, which count shared pages once, the same run may fit. So this is said
(a `SlurmMemoryWarning`, one line, before anything is queued), not refused: the run still goes,
and if Slurm kills it the run says so, naming the setting again.

What a replica keeps resident, measured on this project's test machines (VmRSS of a replica
after a few training steps, `jupyter_px.tracking` imported):

* PyTorch 2.13.0+cpu, a gloo process group, a DDP-wrapped model: 311,804 kB (213 MiB anonymous,
  92 MiB of mapped library files), so ~300 MiB.
* TensorFlow 2.21.0, a compiled Keras model fitted once: 649,824 kB (263 MiB anonymous, 372 MiB
  of mapped library files), so ~630 MiB.
"""

from __future__ import annotations

import warnings
from typing import Any

from ...topology import Topology
from .commands import MemoryDefault, SlurmCommandError, SlurmCommands
from .plan import JobPlan, shape_of
from .settings import SlurmSettings

#: MiB a replica of the framework keeps resident once it trains (see the module's docstring).
RESIDENT_MIB = {"pytorch": 300, "tensorflow": 630}
FRAMEWORK_WORDS = {"pytorch": "a PyTorch replica with gloo", "tensorflow": "a TensorFlow replica"}


class SlurmMemoryWarning(UserWarning):
    """The partition's default memory is below what the topology's replicas need."""


warnings.simplefilter("always", SlurmMemoryWarning)  # each submission says it, not only the first


def per_task_default(default: MemoryDefault, cpus: int, tasks_per_node: int) -> float | None:
    """MiB a task of `cpus` CPUs gets by default (None: a whole node's, not limited here)."""
    if default.mib is None:
        return None
    if default.per == "cpu":
        return float(default.mib * cpus)
    return default.mib / max(1, tasks_per_node)


def undeclared(
    topology: Topology, plan: JobPlan, settings: SlurmSettings, commands: SlurmCommands
) -> tuple[str | None, float | None]:
    """(the line that says a replica will get less memory than it needs, or None; the MiB per
    CPU a replica that declares none gets, or None when unknown or unlimited)."""
    need = RESIDENT_MIB.get(topology.framework or "")
    shapes = [c for c in plan.components if c.shape.mem_per_cpu_mib is None]
    if not shapes:
        return None, None
    try:
        default = commands.memory_default(settings.partition)
    except SlurmCommandError:
        return None, None
    per_cpu = float(default.mib) if default.mib is not None and default.per == "cpu" else None
    if need is None:
        return None, per_cpu
    short = []
    for component in shapes:
        gets = per_task_default(default, component.shape.cpus, len(component.replicas))
        if gets is not None and gets < need:
            short.append((component, gets))
    if not short:
        return None, per_cpu
    keys = [f"{role}-{index}" for component, _ in short for role, index in component.replicas]
    who = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
    gets = min(mib for _, mib in short)
    line = (
        f"{who} declare no memory: Slurm gives each {gets:g} MiB ({default.source}), below the ~{need} MiB "
        f"{FRAMEWORK_WORDS[topology.framework or '']} keeps resident; set resources.memory in the topology "
        f"(memory: {max(1024, 2 * need)} or more)"
    )
    return line, per_cpu


def warn(line: str) -> None:
    warnings.warn(line, SlurmMemoryWarning, stacklevel=4)


def memory_limits(
    topology: Any, declared: dict[tuple[str, int], float | None], default_per_cpu: float | None
) -> dict[tuple[str, int], float]:
    """Each replica's memory limit: what it declared, else the partition's default for its CPUs."""
    out = {}
    for spec in topology.replicas():
        mib = declared.get((spec.role, spec.index))
        if mib is None and default_per_cpu is not None:
            mib = default_per_cpu * shape_of(spec.resources).cpus
        if mib is not None:
            out[(spec.role, spec.index)] = float(mib)
    return out


def memory_limit(spec: Any) -> float | None:
    memory = spec.resources.memory
    if memory is None:
        return None
    return memory.limits if memory.limits is not None else memory.requests
