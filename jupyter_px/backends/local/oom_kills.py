"""Enforcing the replicas' memory limits: which running replicas the memory guard watches, and
the kill of one over its limit, recorded as OOMKilled.

`memory.MemoryGuard` measures (process-tree RSS against each limit, MPI ranks charged to the
workers they stand for); this module acts on what it finds, as a container's cgroup OOM kill
ends up on Kubernetes: SIGKILL to the replica's group, reason OOMKilled (the replica's `Ending`),
a failure its restart policy may retry.
"""

from __future__ import annotations

import logging
import os
import signal
import time

from .memory import MemoryGuard, Overuse, ProcessTable
from .process import kill_group
from .replica import Ending, Replica

log = logging.getLogger(__name__)


def watched(guard: MemoryGuard | None, replicas: list[Replica]) -> list[Replica]:
    """Running replicas with a memory limit to enforce (and not already being ended)."""
    if guard is None:
        return []
    return [r for r in replicas if r.running and r.ending is None and guard.watches(r.spec.role, r.spec.index)]


def enforce(guard: MemoryGuard | None, replicas: list[Replica]) -> None:
    """Poll the guard when it is due; kill each replica it finds over its limit."""
    if guard is None:
        return
    running = [(r.spec.role, r.spec.index, r.popen.pid) for r in watched(guard, replicas) if r.popen is not None]
    for overuse in guard.poll(running, time.monotonic()):
        _oom_kill(overuse, replicas)


def _oom_kill(overuse: Overuse, replicas: list[Replica]) -> None:
    for pid in overuse.kill_pids:
        log.info("%s; killing pid %d", overuse.message, pid)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    replica = next((r for r in replicas if (r.spec.role, r.spec.index) == (overuse.role, overuse.index)), None)
    if replica is None or not replica.running or replica.ending is not None:
        return
    log.info("%s: %s; killing it", replica.key, overuse.message)
    replica.ending = Ending.oom(overuse.message)
    below = ProcessTable().descendants(replica.popen.pid) if replica.popen is not None else []
    if replica.pgid:
        kill_group(replica.pgid, signal.SIGKILL)
    for pid in below:  # what left its group and session: a cgroup's OOM kill takes it too
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
