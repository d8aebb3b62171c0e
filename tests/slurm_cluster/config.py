"""The configuration files of a one-host Slurm cluster, as text (pure functions).

Written from what worked on Debian 12's Slurm 22.05 on the test machines; the lines that
mattered, and why:

* `SlurmctldHost=<short hostname>(127.0.0.1)` and every node's `NodeHostname=<short hostname>`:
  a daemon finds its own configuration lines by the machine's real short hostname (slurmd -N
  picks the node; `hostname -s` differs between machines, so it is generated).
* One `NodeName=... NodeAddr=127.0.0.1 Port=<p>` line per node, each its own port: Debian's
  slurmd is built with multiple-slurmd support (`slurmd -N <node>`), so one host runs them all.
  `%n` in the spool, pid and log paths keeps the nodes apart. `SlurmdParameters=config_overrides`
  lets a node claim more CPUs than the host has.
* Free ports (never fixed ones: the machines are shared) for slurmctld, slurmd and slurmdbd.
* `SelectType=select/cons_tres` + `CR_Core_Memory` + `DefMemPerCPU`: without a default memory a
  job takes its whole node and jobs run one after another.
* `SchedulerParameters=defer_batch=0,bf_interval=1`: only the backfill scheduler starts
  heterogeneous jobs; a one-second interval starts them soon.
* cgroup v1 (`proctrack/cgroup` + `task/cgroup`, memory constrained): a task over its memory is
  killed at once and reported "Out Of Memory". Without cgroup v1, `proctrack/linuxproc` +
  `jobacct_gather/linux` with `OverMemoryKill` kills an over-limit step within a few seconds.
* `AuthInfo=socket=<private munged socket>`: the cluster's own munged, so nothing of the host's
  (or of another test's cluster) is used or disturbed.

Which way memory is enforced is the site's choice (`Site`): the project's own cluster constrains
each step with cgroups (where cgroup v1 is usable here); `ACCOUNTING_ENFORCED` is the other common
site, one without cgroups, where slurmstepd samples every task's resident memory
(`jobacct_gather/linux`) and kills a step whose sum passes its limit (`OverMemoryKill`), with
slurmdbd keeping accounting so `sacct` answers. Both give a job that declares no memory
`DefMemPerCPU=256` MiB per CPU, as many sites do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Site:
    """A site's configuration: how it enforces memory, whether it keeps accounting (slurmdbd, so
    `sacct` answers) and the memory a job gets when it declares none."""

    name: str
    #: "cgroup": `proctrack/cgroup` + `task/cgroup` with RAM constrained (the kernel's OOM killer
    #: ends the task over its step's limit); "jobacct": `proctrack/linuxproc` +
    #: `jobacct_gather/linux` with `OverMemoryKill` (slurmstepd kills the step whose tasks' summed
    #: RSS passes its limit); None: cgroup where cgroup v1 is usable here, else jobacct
    enforcement: str | None = None
    accounting: bool = False
    def_mem_per_cpu_mib: int = 256
    #: seconds between jobacct_gather's samples (how soon an over-limit step is seen)
    gather_frequency_s: int = 1

    def uses_cgroups(self, cgroups_usable: bool) -> bool:
        return self.enforcement == "cgroup" or (self.enforcement is None and cgroups_usable)


#: The project's own cluster: cgroups where they work here, no accounting.
OWN = Site("own")
#: A site without cgroups: job accounting enforces memory (`OverMemoryKill`), slurmdbd keeps it.
ACCOUNTING_ENFORCED = Site("accounting-enforced", enforcement="jobacct", accounting=True)
SITES = {site.name: site for site in (OWN, ACCOUNTING_ENFORCED)}


@dataclass(frozen=True)
class NodeSpec:
    name: str
    port: int
    cpus: int
    memory_mib: int
    gpus: int = 0  # fake GPUs (gres.conf), see `gres_conf`


@dataclass(frozen=True)
class ClusterLayout:
    """Everything the configuration files say, decided once by `SlurmCluster`."""

    root: Path
    name: str
    host: str
    ctld_port: int
    slurmd_port: int
    munge_socket: Path
    nodes: tuple[NodeSpec, ...]
    partition: str = "debug"
    cgroups: bool = True
    min_job_age_s: int = 60
    accounting_port: int | None = None  # slurmdbd's port; None: no accounting
    site: Site = OWN
    extra: tuple[str, ...] = field(default_factory=tuple)
    #: AuthInfo cred_expire: the job credential's lifetime, which is also how long a requeued
    #: job waits before it may start again (slurm.conf(5); None: Slurm's 120 s)
    cred_expire_s: int | None = None

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"


def slurm_conf(layout: ClusterLayout) -> str:
    root = layout.root
    lines = [
        f"ClusterName={layout.name}",
        f"SlurmctldHost={layout.host}(127.0.0.1)",
        f"SlurmctldPort={layout.ctld_port}",
        f"SlurmdPort={layout.slurmd_port}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={layout.munge_socket}"
        + (f",cred_expire={layout.cred_expire_s}" if layout.cred_expire_s else ""),
        f"StateSaveLocation={root / 'state'}",
        f"SlurmdSpoolDir={root / 'spool' / '%n'}",
        f"SlurmctldPidFile={root / 'run' / 'slurmctld.pid'}",
        f"SlurmdPidFile={root / 'run' / 'slurmd-%n.pid'}",
        f"SlurmctldLogFile={root / 'log' / 'slurmctld.log'}",
        f"SlurmdLogFile={root / 'log' / 'slurmd-%n.log'}",
        "SlurmdParameters=config_overrides",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        f"DefMemPerCPU={layout.site.def_mem_per_cpu_mib}",
        "SchedulerType=sched/backfill",
        "SchedulerParameters=defer_batch=0,bf_interval=1",
        "MpiDefault=none",
        "ReturnToService=2",
        "KillWait=5",
        f"MinJobAge={layout.min_job_age_s}",
        "InactiveLimit=0",
        "SlurmctldTimeout=30",
        "SlurmdTimeout=60",
    ]
    if layout.cgroups:
        lines += ["ProctrackType=proctrack/cgroup", "TaskPlugin=task/cgroup", "JobAcctGatherType=jobacct_gather/cgroup"]
    else:
        lines += [
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/linux",
            f"JobAcctGatherFrequency={layout.site.gather_frequency_s}",
            "JobAcctGatherParams=OverMemoryKill",
        ]
    if layout.accounting_port is not None:
        lines += [
            "AccountingStorageType=accounting_storage/slurmdbd",
            "AccountingStorageHost=127.0.0.1",
            f"AccountingStoragePort={layout.accounting_port}",
            # the munged socket for connections to slurmdbd (AuthInfo covers the others)
            f"AccountingStoragePass={layout.munge_socket}",
        ]
    else:
        lines += [
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/filetxt",
            f"JobCompLoc={root / 'log' / 'jobcomp.txt'}",
        ]
    lines += list(layout.extra)
    if any(node.gpus for node in layout.nodes):
        lines.append("GresTypes=gpu")
    for node in layout.nodes:
        gres = f" Gres=gpu:{FAKE_GPU_TYPE}:{node.gpus}" if node.gpus else ""
        lines.append(
            f"NodeName={node.name} NodeHostname={layout.host} NodeAddr=127.0.0.1 Port={node.port} "
            f"CPUs={node.cpus} RealMemory={node.memory_mib}{gres} State=UNKNOWN"
        )
    names = ",".join(node.name for node in layout.nodes)
    lines.append(f"PartitionName={layout.partition} Nodes={names} Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


#: The type the fake GPUs are given (`--gpus-per-task=fake:1`, `--gres=gpu:fake:1`).
FAKE_GPU_TYPE = "fake"


def gres_conf(layout: ClusterLayout) -> str:
    """Fake GPUs, as Slurm's own test suite declares them where no GPU exists: `gres.conf` lines
    whose `File=` are character devices with /dev/null's numbers (one per GPU and node, made in
    the cluster's folder; slurmd refuses plain files). slurmd takes them as GPUs: the scheduler
    counts them, `--gpus-per-task`/`--gres` allocate them and each task gets
    `CUDA_VISIBLE_DEVICES` (and `SLURM_STEP_GPUS`) for the ones it was given. What it does not
    cover: no device is there to open, and with `ConstrainDevices=no` (this cluster) nothing
    stops a task from using another task's GPU."""
    lines = []
    for node in layout.nodes:
        if node.gpus:
            files = f"{layout.root / 'gpus' / node.name}-[0-{node.gpus - 1}]"
            lines.append(f"NodeName={node.name} Name=gpu Type={FAKE_GPU_TYPE} File={files}")
    return "\n".join(lines) + "\n"


def cgroup_conf() -> str:
    return "CgroupPlugin=cgroup/v1\nConstrainCores=no\nConstrainRAMSpace=yes\nConstrainSwapSpace=no\n"


def slurmdbd_conf(root: Path, munge_socket: Path, port: int, db_port: int, db_password: str) -> str:
    return (
        "\n".join(
            [
                "AuthType=auth/munge",
                f"AuthInfo=socket={munge_socket}",
                "DbdHost=localhost",
                "DbdAddr=127.0.0.1",
                f"DbdPort={port}",
                "SlurmUser=root",
                f"PidFile={root / 'run' / 'slurmdbd.pid'}",
                f"LogFile={root / 'log' / 'slurmdbd.log'}",
                "StorageType=accounting_storage/mysql",
                "StorageHost=127.0.0.1",
                f"StoragePort={db_port}",
                "StorageUser=slurm",
                f"StoragePass={db_password}",
                "StorageLoc=slurm_acct_db",
            ]
        )
        + "\n"
    )
