"""`jupyter px kill RUN worker-1`: end one replica of a local run on purpose, as a crash would.

The signal goes to the replica's process group (each replica leads one, `process.spawn`), so
its whole tree goes as it would on a lost node. The pid comes from the run's status and is
checked first: it must still be a child of the run's supervisor, itself checked by its identity
(pid and creation time), so a pid the kernel has since given to another process is never
signalled. (Not by the `PX_RUN_ID` in its environment: a replica forked warm from a zygote
carries the zygote's in /proc, its own being set after the fork.) The supervisor notices the exit like any
other and applies the run's policies (`attempts.py`: the gang restarts when retries are left).
"""

from __future__ import annotations

import os
import signal

import psutil

from ...processes import detached
from ...runstore import RunStatus
from ..base import BackendError, replica_to_kill


def kill_replica(status: RunStatus, role: str, index: int, signum: int) -> str:
    """Signal one running replica's process group; what was done, in words."""
    replica = replica_to_kill(status, role, index)
    if not replica.pid:
        raise BackendError(f"{replica.key} of run {status.run_id} has no process yet")
    pid, owner = replica.pid, status.owner
    if owner is None or not detached.ProcessIdentity(owner.pid, owner.started_at).alive():
        raise BackendError(f"the supervisor of run {status.run_id} is gone: see jupyter px status {status.run_id}")
    try:
        parent = psutil.Process(pid).ppid()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        raise BackendError(f"{replica.key} (pid {pid}) has just ended") from None
    if parent != owner.pid:
        raise BackendError(f"pid {pid} is no longer {replica.key} of run {status.run_id}")
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        raise BackendError(f"{replica.key} (pid {pid}) has just ended") from None
    return f"sent {signal.Signals(signum).name} to {replica.key} of run {status.run_id} (pid {pid})"
