"""How many processes this machine can run for one local run, checked before anything is stored.

The topology model accepts counts that make sense on a cluster (a thousand workers); on one
machine each replica is at least one process with its own port, so a count this machine cannot
hold would otherwise only fail later, inside the supervisor, with the run half started. Three
things bound it, and `check` names the number each allows:

* processes: a per-run maximum (`MAX_PROCESSES_PER_RUN`, PX_MAX_LOCAL_PROCESSES overrides), the
  user's process limit (RLIMIT_NPROC, which the kernel does not apply to root) less what the user
  already runs, and the free pids (`kernel.pid_max` less the processes that exist);
* ports: one per replica, from the ports `processes/ports.py` draws from (those below the kernel's
  ephemeral range, `net.ipv4.ip_local_port_range`);
* memory: an idle replica process (the interpreter and the runner) is about
  `PROCESS_BASELINE_MIB` resident, so the memory available now caps the count even before the
  user's code allocates anything.

Only counts are read (`Topology.counts()`), never the resolved replicas, so refusing 10^20
workers costs as little as accepting two.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass

from ...processes import ports
from ...topology import Topology

#: The most processes one local run may have, whatever the machine (PX_MAX_LOCAL_PROCESSES overrides).
MAX_PROCESSES_PER_RUN = int(os.environ.get("PX_MAX_LOCAL_PROCESSES", "1024"))

#: Resident memory of a replica process before the user's code runs (Python 3.11 + the runner: 12 MiB measured).
PROCESS_BASELINE_MIB = 12.0

#: The supervisor and its watchdog.
RUN_OVERHEAD_PROCESSES = 2


@dataclass(frozen=True)
class Capacity:
    """What this machine has left for one more run."""

    max_processes: int
    nproc_headroom: int | None  # None: no per-user limit applies (root, or unlimited)
    pid_headroom: int | None
    ports: int
    available_mib: float


def processes_needed(topology: Topology) -> int:
    """Processes the run will have at once: replicas, their local ranks, MPI ranks, the supervisor."""
    counts = topology.counts()
    replicas = sum(counts.values())
    nproc = topology.environment.processes_per_replica
    if topology.is_mpi:  # placeholders + mpirun, and every rank under mpirun
        extra = counts.get("worker", 0) * nproc
    elif topology.framework == "pytorch" and nproc > 1:  # each replica's runner starts nproc ranks
        extra = replicas * nproc
    else:
        extra = 0
    return replicas + extra + RUN_OVERHEAD_PROCESSES


def _user_processes(uid: int) -> int:
    """Tasks (threads count: RLIMIT_NPROC counts them) of the real user `uid`."""
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as handle:
                fields = dict(line.split(b":", 1) for line in handle.read().splitlines() if b":" in line)
        except OSError:
            continue
        if int(fields.get(b"Uid", b"-1").split()[0]) == uid:
            total += int(fields.get(b"Threads", b"1").strip())
    return total


def _read_int_file(path: str) -> list[int] | None:
    try:
        with open(path, encoding="ascii") as handle:
            return [int(part) for part in handle.read().split()]
    except (OSError, ValueError):
        return None


def this_capacity() -> Capacity:
    import psutil

    nproc_headroom = None
    soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
    if soft != resource.RLIM_INFINITY and os.geteuid() != 0 and os.path.isdir("/proc"):
        nproc_headroom = max(0, soft - _user_processes(os.getuid()))
    pid_headroom = None
    pid_max = _read_int_file("/proc/sys/kernel/pid_max")
    if pid_max:
        pid_headroom = max(0, pid_max[0] - sum(1 for name in os.listdir("/proc") if name.isdigit()))
    return Capacity(
        max_processes=MAX_PROCESSES_PER_RUN,
        nproc_headroom=nproc_headroom,
        pid_headroom=pid_headroom,
        ports=ports.pool_size(),
        available_mib=psutil.virtual_memory().available / 2**20,
    )


def problems(topology: Topology, capacity: Capacity | None = None) -> list[str]:
    """Why this machine cannot run the topology (empty when it can), each naming what it can run."""
    capacity = capacity or this_capacity()
    needed = processes_needed(topology)
    replicas = topology.total_replicas()
    found = []
    if needed > capacity.max_processes:
        found.append(
            f"it needs {needed:,} processes ({replicas:,} replicas), but one local run may have at most "
            f"{capacity.max_processes:,} (PX_MAX_LOCAL_PROCESSES)"
        )
    if capacity.nproc_headroom is not None and needed > capacity.nproc_headroom:
        found.append(
            f"it needs {needed:,} processes, but this user may start {capacity.nproc_headroom:,} more "
            f"(RLIMIT_NPROC, `ulimit -u`)"
        )
    if capacity.pid_headroom is not None and needed > capacity.pid_headroom:
        found.append(f"it needs {needed:,} processes, but this machine has {capacity.pid_headroom:,} free pids")
    if replicas > capacity.ports:
        found.append(
            f"it needs {replicas:,} ports (one per replica), but this machine's runs draw from {capacity.ports:,}"
        )
    baseline = needed * PROCESS_BASELINE_MIB
    if baseline > capacity.available_mib:
        fits = int(capacity.available_mib // PROCESS_BASELINE_MIB)
        found.append(
            f"its {needed:,} processes need about {baseline:,.0f} MiB before any user code runs "
            f"({PROCESS_BASELINE_MIB:g} MiB each), but {capacity.available_mib:,.0f} MiB are available: "
            f"room for {fits:,} processes"
        )
    return found
