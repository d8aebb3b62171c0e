"""Before anything is queued: would Slurm take the job, and do its nodes see the run store?

* `sbatch --test-only` with the very script submit would send: a request the partition can never
  satisfy (a task larger than any node, a GRES no node has, an unknown partition, account or QOS)
  is refused here with Slurm's own reason, and the largest node of the partition named beside it
  (from `sinfo --json`), so the user sees what to change.
* Replicas that declare no memory get the partition's default (`DefMemPerCPU`): where it is
  below what their framework keeps resident, one line says so, naming the setting to change
  (`default_memory.py`); the run is still submitted.
* A one-task probe (`srun --immediate`): a file written here must be readable on a compute node,
  or the tasks could neither read their code nor write their logs. Proven once an hour per run
  store and cluster (`$PX_HOME/slurm/shared-ok-<cluster>.json`); when the cluster has no free CPU
  within 5 s the probe cannot run (and is not tried again for 5 minutes: each run would wait for
  it), and the job itself says so later if the store is not shared.
"""

from __future__ import annotations

import json
import logging
import secrets
import tempfile
import time
from pathlib import Path

from ...runstore import atomic_write_json
from ...topology import Topology
from ..base import BackendError, ResourceUnavailable
from . import default_memory
from .commands import SlurmCommandError, SlurmCommands
from .plan import JobPlan, job_plan, unsupported
from .script import job_script
from .settings import SlurmSettings

log = logging.getLogger(__name__)

#: How long a successful probe of the shared filesystem is trusted.
PROBE_VALID_S = 3600.0
#: After a probe found no free CPU, how long the next runs go without one (each would wait for it).
PROBE_BUSY_S = 300.0


def check(
    topology: Topology, settings: SlurmSettings, commands: SlurmCommands, store_root: Path
) -> tuple[JobPlan, float | None]:
    """Raise BackendError / ResourceUnavailable (one line) unless Slurm would take `topology`;
    warn (`default_memory.SlurmMemoryWarning`, one line) when replicas that declare no memory
    would get less than their framework keeps resident. Returns the plan and the MiB per CPU
    Slurm gives a replica that declares no memory (None: unknown or a whole node's)."""
    problem = unsupported(topology)
    if problem:
        raise BackendError(problem)
    plan = job_plan(topology)
    with tempfile.TemporaryDirectory(prefix="px-slurm-check-") as folder:
        script = Path(folder) / "job.sh"
        script.write_text(job_script("preflight", Path(folder) / "run", plan, settings))
        reason = commands.test_only(script)
    if reason:
        why = _largest(plan, settings, commands)
        raise ResourceUnavailable(f"Slurm refuses this job (sbatch --test-only): {reason}{why}")
    short, default_per_cpu = default_memory.undeclared(topology, plan, settings, commands)
    if short:
        default_memory.warn(short)
    if settings.probe_shared:
        probe_shared(store_root, settings, commands)
    return plan, default_per_cpu


def _largest(plan: JobPlan, settings: SlurmSettings, commands: SlurmCommands) -> str:
    """`; it asks for tasks of 8 CPUs, 9000 MiB; the largest node of partition debug has 4 CPUs, 4000 MiB`."""
    asks = "; ".join(component.shape.describe() for component in plan.components)
    try:
        nodes = commands.nodes()
    except SlurmCommandError:
        return f"; it asks for tasks of {asks}"
    if settings.partition:
        nodes = [n for n in nodes if settings.partition in n.partitions]
    if not nodes:
        return f"; it asks for tasks of {asks}"
    biggest = max(nodes, key=lambda n: (n.cpus, n.memory_mib))
    where = f"partition {settings.partition}" if settings.partition else "the cluster"
    gres = f", GRES {biggest.gres}" if biggest.gres and biggest.gres != "(null)" else ", no GRES"
    return (
        f"; it asks for tasks of {asks}; the largest node of {where} ({biggest.name}) has "
        f"{biggest.cpus} CPUs, {biggest.memory_mib} MiB{gres}"
    )


def probe_shared(store_root: Path, settings: SlurmSettings, commands: SlurmCommands) -> None:
    """BackendError unless a compute node reads a file written under `store_root` (cached)."""
    folder = store_root / "slurm"
    folder.mkdir(parents=True, exist_ok=True)
    key = (commands.slurm_conf or "default").replace("/", "_")[-80:]
    marker = folder / f"shared-ok-{key}.json"
    busy = folder / f"shared-busy-{key}.json"
    for path, valid_s in ((marker, PROBE_VALID_S), (busy, PROBE_BUSY_S)):
        try:
            if time.time() - json.loads(path.read_text())["checked_at"] < valid_s:
                return
        except (OSError, ValueError, KeyError, TypeError):
            pass
    token = folder / f"probe-{secrets.token_hex(6)}"
    token.write_text("jupyter-px probe\n")
    try:
        extra = [f"--{flag}={value}" for flag, value in (("account", settings.account), ("qos", settings.qos)) if value]
        done = commands.probe(["test", "-r", str(token)], partition=settings.partition, extra=extra)
    finally:
        token.unlink(missing_ok=True)
    if done.returncode == 0:
        atomic_write_json(marker, {"checked_at": time.time(), "folder": str(store_root)})
        return
    said = (done.stderr or "").strip().splitlines()
    if any("Unable to allocate resources" in line or "Immediate" in line for line in said):
        log.info("the shared-filesystem probe could not run now (%s); the job will tell", said[-1] if said else "")
        atomic_write_json(busy, {"checked_at": time.time(), "said": said[-1] if said else ""})
        return
    raise BackendError(
        f"the compute nodes do not see the run store {store_root} (a one-task probe could not read a file written "
        "there): put PX_HOME on a filesystem the nodes share, or set shared_dir in the Slurm settings"
        + (f" ({said[-1]})" if said else "")
    )
