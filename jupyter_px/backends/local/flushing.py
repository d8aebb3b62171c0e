"""What a stop asks of a replica's metrics, as the supervisor sees it through the ledgers.

A stopped replica gets SIGTERM and up to `STOP_GRACE_S` to write what `jupyter_px.tracking`
accepted (`runstore.ledger`). `drained` tells the supervisor when waiting longer cannot save a
point (every process of the replica that logged metrics has written them all, and would die on
SIGTERM once its main thread returns to Python), so a replica stuck in a collective is killed
after a second instead of thirty. `record` writes what settling an exit found into the
replica's status, where every surface shows it.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Iterable

import psutil

from ...runstore import ReplicaStatus, RunPaths
from ...runstore.ledger import Ledger, all_ledgers, replica_ledgers
from ...runstore.settle import Settled, settle_replica
from .config import DRAINED_KILL_AFTER_S, LEDGER_POLL_S
from .process import kill_group
from .replica import Replica

log = logging.getLogger(__name__)


def drained(paths: RunPaths, key: str) -> bool:
    """Whether replica `key`'s live processes that logged metrics hold nothing unwritten (in the
    JSONL and in TensorBoard) and would end on SIGTERM by themselves (tracking's handler).

    False when none of them logged metrics: nothing tells then whether SIGTERM was left to the
    default (the replica is already gone) or to a handler of the user's, which gets the grace."""
    return _all_drained([ledger for ledger in replica_ledgers(paths.metrics_dir, key) if ledger.writer_running()])


def _all_drained(live: list[Ledger]) -> bool:
    return bool(live) and all(
        ledger.sigterm_flushes and not ledger.unwritten and not ledger.tensorboard_behind for ledger in live
    )


def kill_due(replica: Replica, paths: RunPaths, now: float, grace: float) -> str | None:
    """Why replica `replica`, being stopped, is SIGKILLed now: its grace is up, or it has written
    every point and still runs `DRAINED_KILL_AFTER_S` after SIGTERM (`drained`); else None."""
    if not (replica.running and replica.kill_at is not None):
        return None
    if replica.kill_at <= now:
        return f"still running {grace:g} s after SIGTERM"
    if replica.term_at is not None and now - replica.term_at >= DRAINED_KILL_AFTER_S and drained(paths, replica.key):
        return f"wrote every metric point but still runs {now - replica.term_at:g} s after SIGTERM"
    return None


def settle_exit(paths: RunPaths, replica: Replica) -> str | None:
    """After an exit of `replica`: TensorBoard catches up with the JSONL, and what its processes
    accepted but never wrote (or dropped) is recorded in its status; the notice, if any."""
    try:
        settled = settle_replica(paths, replica.spec.role, replica.spec.index)
    except OSError as error:
        log.warning("%s: cannot settle its metrics: %s", replica.key, error)
        return None
    if settled.repaired:
        log.info("%s: %d metric points added to TensorBoard from the JSONL", replica.key, settled.repaired)
    notice = record(replica.status, settled)
    if notice:
        log.warning("%s", notice)
    return notice


def record(status: ReplicaStatus, settled: Settled) -> str | None:
    """Add what `settle_replica` found to the replica's status; the notice, if any points were
    lost or dropped (also added to the replica's message)."""
    status.points_lost += settled.lost
    status.points_dropped += settled.dropped
    notice = settled.notice(status.key)
    if notice:
        said = notice.split(": ", 1)[1]
        status.message = f"{status.message}; {said}" if status.message else said
    return notice


def let_flush(paths: RunPaths, pgids: Iterable[int], grace: float) -> None:
    """After the supervisor died: SIGTERM the replicas' process groups (their leaders had it from
    the kernel, as their parent-death signal), then wait until every process in them is gone, or
    every process that logged metrics has written them all (and a second has passed), or `grace`
    is up. The caller kills what is left."""
    groups = set(pgids)
    for pgid in groups:
        kill_group(pgid, signal.SIGTERM)
    started = time.monotonic()
    while time.monotonic() - started < grace:
        if not _group_members(groups):
            return
        live = [ledger for ledger in all_ledgers(paths.metrics_dir) if ledger.writer_running()]
        if time.monotonic() - started >= DRAINED_KILL_AFTER_S and _all_drained(live):
            return
        time.sleep(LEDGER_POLL_S)


def _group_members(groups: set[int]) -> list[int]:
    """Live (not zombie) processes in the process groups `groups`."""
    members = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(proc.pid) in groups and proc.status() != psutil.STATUS_ZOMBIE:
                members.append(proc.pid)
        except (OSError, psutil.Error):
            continue
    return members
