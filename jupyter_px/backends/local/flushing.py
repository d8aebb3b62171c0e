"""What a stop asks of a replica's metrics, as the supervisor sees it through the ledgers.

A stopped replica gets SIGTERM and up to `STOP_GRACE_S` to write what `jupyter_px.tracking`
accepted (`runstore.ledger`). `drained` tells the supervisor when waiting longer cannot save a
point (every process of the replica that logged metrics has written them all, and would die on
SIGTERM once its main thread returns to Python), so a replica stuck in a collective is killed
after a second instead of thirty. `record` writes what settling an exit found into the
replica's status, where every surface shows it.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable

import psutil

from ...runstore import ReplicaStatus, RunPaths
from ...runstore.ledger import Ledger, all_ledgers, replica_ledgers
from ...runstore.settle import Settled
from .config import DRAINED_KILL_AFTER_S, LEDGER_POLL_S
from .process import kill_group


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
