"""Settling a replica's metrics once its processes are gone: TensorBoard caught up with the JSONL,
and the points that never reached either counted.

Inside a replica, `jupyter_px.tracking` writes each batch of points to the metrics JSONL, then to
TensorBoard's event file, and keeps its counts in a ledger (`runstore.ledger`). A process killed
between those two writes leaves TensorBoard behind the JSONL, and one killed before it flushed
loses what it held. The run's owner (the local supervisor, a follower on a shared file system)
calls `settle_replica` after each exit of a replica: the missing TensorBoard events are written
from the JSONL (so the two never disagree about what was written), and the points accepted but
never written, or dropped because the queue was full, are returned so the run records them.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, replace

from .layout import EVENTS_FILE_SUFFIX, PROCESS_INFIX, RunPaths
from .ledger import Ledger, replica_ledgers

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Settled:
    """What settling one exit of a replica found (summed over its processes)."""

    lost: int = 0  # accepted by log_metrics, never written: the process was killed first
    dropped: int = 0  # refused by log_metrics: the queue was full
    repaired: int = 0  # points added to TensorBoard from the JSONL

    def notice(self, key: str) -> str | None:
        """The line every surface shows, or None when nothing was lost."""
        parts = []
        if self.lost:
            parts.append(f"{self.lost:,} metric points not written: killed before they were flushed")
        if self.dropped:
            parts.append(f"{self.dropped:,} metric points dropped: logged while the queue was full")
        return f"{key}: " + "; ".join(parts) if parts else None


def settle_replica(paths: RunPaths, role: str, index: int) -> Settled:
    """Settle every ledger of replica `role-index` whose process is gone. A ledger is removed once
    settled, so a restarted replica's next exit counts only its own points; one whose process
    still runs (it left the replica's process group) is left for a later call."""
    key = f"{role}-{index}"
    lost = dropped = repaired = 0
    for ledger in replica_ledgers(paths.metrics_dir, key):
        if ledger.writer_running():
            continue
        try:
            ledger = _finish_cut_batch(ledger)
        except OSError as error:  # the JSONL is as the kill left it; readers skip a fragment
            log.warning("%s: cannot finish the batch a kill cut short: %r", key, error)
        if ledger.tensorboard_behind:
            try:
                repaired += _catch_up_tensorboard(paths, key, ledger)
            except Exception as error:  # TensorBoard misses points the JSONL has; say so, go on
                log.warning("%s: cannot add the missing points to TensorBoard: %r", key, error)
        lost += ledger.unwritten
        dropped += ledger.dropped
        try:
            os.unlink(ledger.path)
        except OSError:
            pass
    return Settled(lost=lost, dropped=dropped, repaired=repaired)


def _finish_cut_batch(ledger: Ledger) -> Ledger:
    """The ledger as the JSONL really ends, after a kill cut a batch's write short.

    The ledger counts a batch as written only once its one `write` returned, but the kernel
    stops a large write to a file at a page boundary when SIGKILL arrives (Linux
    `generic_perform_write`): the file then holds some of the batch's lines whole and a fragment
    of the next. The whole lines are written points (TensorBoard catches up with them, and they
    are not counted lost); the fragment, which no reader can use, is cut off. Only this process
    wrote past `jsonl_end` (one writer per metrics file at a time, and it is gone)."""
    path = ledger.metrics_file
    if ledger.jsonl_end < 0 or not ledger.unwritten:
        return ledger
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:  # the run was deleted
        return ledger
    try:
        size = os.fstat(fd).st_size
        if size <= ledger.jsonl_end:
            return ledger
        tail = os.pread(fd, size - ledger.jsonl_end, ledger.jsonl_end)
        whole = tail[: tail.rfind(b"\n") + 1]
        if len(whole) < len(tail):
            os.ftruncate(fd, ledger.jsonl_end + len(whole))
    finally:
        os.close(fd)
    lines = min(whole.count(b"\n"), ledger.unwritten)
    return replace(ledger, written=ledger.written + lines, jsonl_end=ledger.jsonl_end + len(whole))


def _catch_up_tensorboard(paths: RunPaths, key: str, ledger: Ledger) -> int:
    """Write the points of JSONL bytes [tensorboard_end, jsonl_end) as TensorBoard events into the
    process's logdir; record in the ledger that TensorBoard has caught up."""
    from .event_writer import ScalarEventWriter, count_records

    metrics_file = ledger.metrics_file
    logdir = paths.tensorboard_dir / key
    name = metrics_file.name
    if name.startswith(f"{key}{PROCESS_INFIX}"):  # worker-0.rank2.jsonl: process 2's own logdir
        logdir = logdir / name[len(key) + 1 :].split(".", 1)[0]
    fd = os.open(metrics_file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        data = os.pread(fd, ledger.jsonl_end - ledger.tensorboard_end, ledger.tensorboard_end)
    finally:
        os.close(fd)
    # Points of the batch the process was writing when it was killed may be in its event file
    # already (a write cut short): they are not written twice.
    already = 0
    for event_file in logdir.glob(f"events.out.tfevents.*.{ledger.pid}.*{EVENTS_FILE_SUFFIX}"):
        found = count_records(event_file, ledger.tensorboard_file_end)
        already += max(0, found - 1) if ledger.tensorboard_file_end == 0 else found  # the 1st: the version
    calls = ledger.tensorboard_calls
    records: list[tuple[int, float, dict[str, float]]] = []
    for line in data.splitlines():
        try:
            point = json.loads(line)
            values = {str(k): float(v) for k, v in point["metrics"].items()}
            step, wall_time = point.get("step"), float(point["time"])
        except (ValueError, TypeError, KeyError, AttributeError):
            continue  # a fragment a failed write left: readers skip it too
        calls += 1
        if already:
            already -= 1
            continue
        records.append((calls - 1 if step is None else int(step), wall_time, values))
    if records:
        ScalarEventWriter(logdir, source="jupyter_px.settle", anchor=paths.tensorboard_dir).write(records)
    return len(records)
