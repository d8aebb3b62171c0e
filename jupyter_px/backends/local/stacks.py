"""Every live replica's stacks, for a local run: which processes to ask.

The replicas are the supervisor's children, and their pids are in status.json. A pid alone may
name a later, unrelated process once the replica is gone, so a pid is signalled only while its
process was created when the replica was recorded started (`IDENTITY_SLACK_S`); the signal itself
(`stack_signal.STACKS_SIGNAL`) does nothing to a process that has not armed it.
"""

from __future__ import annotations

from typing import Any

import psutil

from ...diagnostics import taking
from ...runstore import ReplicaState, RunStatus, RunStore

#: How far apart a replica's recorded start and its process's creation may be (a loaded machine).
IDENTITY_SLACK_S = 30.0


def live_replicas(status: RunStatus) -> dict[str, int]:
    """Replica key -> pid, for each replica running now under the pid status.json names."""
    found = {}
    for replica in status.replicas:
        if replica.state != ReplicaState.RUNNING or not replica.pid or replica.started_at is None:
            continue
        try:
            created = psutil.Process(replica.pid).create_time()
        except psutil.Error:
            continue
        if abs(created - replica.started_at) <= IDENTITY_SLACK_S:
            found[replica.key] = replica.pid
    return found


def take(store: RunStore, run_id: str, why: str = "on request") -> dict[str, Any]:
    """Take a snapshot of the run's live replicas now and keep it in the run."""
    targets = live_replicas(store.status(run_id))
    return taking.take(store.paths(run_id).root, run_id, targets, why=why)
