"""Each replica's CPU and memory, sampled where it runs: `system/cpu_percent`, `system/rss_mib`.

A rank at 100% CPU beside ranks at 3% (a DataLoader bound rank, a rank spinning in a busy wait),
or a rank whose memory climbs step after step, is visible without a profiler. Every `SAMPLE_EVERY_S`
the sampler (the local supervisor; on Slurm the launcher of a node's replicas) reads, for each
running replica, its process and every descendant (a DataLoader's
workers, the ranks of `processes_per_replica`) straight from /proc: the tree from
`/proc/<pid>/task/<tid>/children`, CPU time from `/proc/<pid>/stat` (utime + stime), resident
memory from `/proc/<pid>/statm`. No scan of every process on the machine: a few small reads per
process of the run, well under 1% of a core per replica.

The points go to `metrics/<role>-<index>.system.jsonl` (`runstore.layout.SYSTEM_INFIX`), one JSON
line each in the format tracking writes, step-less, so the metrics reader shows them as the
replica's own `system/...` series (same cursors, plots and comparison) while the file the
replica's tracking writes (and its ledger) stays the replica's alone. CPU % is of one core (a
replica using two cores shows 200), over the interval since the previous sample of the same
process; a descendant that ended in between takes its CPU time with it, which only lowers a sample.
On a machine with NVIDIA GPUs, each GPU the replica's processes use adds its utilisation, the
replica's memory on it and its power (`gpu_metrics.py`).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path

from ..runstore.layout import SYSTEM_INFIX
from .gpu_metrics import GpuUsage

log = logging.getLogger(__name__)

#: How often each replica is sampled.
SAMPLE_EVERY_S = 2.0
_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def children(pid: int) -> list[int]:
    """`pid`'s child processes now (none when it is gone)."""
    found: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as handle:
                found.extend(int(child) for child in handle.read().split())
        except (OSError, ValueError):
            continue
    return found


def process_tree(pid: int) -> list[int]:
    """`pid` and all its descendants that are alive now."""
    tree, pending = [], [pid]
    while pending:
        current = pending.pop()
        tree.append(current)
        pending.extend(children(current))
    return tree


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        fields = handle.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime (fields 14, 15 of stat(5))


def _rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/statm", "rb") as handle:
        return int(handle.read().split()[1]) * _PAGE


def tree_usage(pid: int, members: list[int] | None = None) -> tuple[float, int]:
    """(CPU seconds used so far, resident bytes now) of `pid`'s tree (0, 0 when it is gone)."""
    cpu, rss = 0.0, 0
    for member in process_tree(pid) if members is None else members:
        try:
            cpu += _cpu_seconds(member)
            rss += _rss_bytes(member)
        except (OSError, ValueError, IndexError):
            continue  # ended meanwhile
    return cpu, rss


class SystemSampler:
    """Sampling on each turn of its owner's loop: `sample(pids)` (it acts every `SAMPLE_EVERY_S`),
    each replica's points written to `metrics_dir`."""

    def __init__(self, metrics_dir: Path, every_s: float = SAMPLE_EVERY_S):
        self.metrics_dir = metrics_dir
        self.every_s = every_s
        self.next_at = 0.0
        #: replica key -> (pid, monotonic time, CPU seconds) of its previous sample
        self.previous: dict[str, tuple[int, float, float]] = {}
        self.failing = False
        self.gpus = GpuUsage()

    def sample(self, pids: Mapping[str, int | None]) -> None:
        """`pids`: each replica's key (`worker-1`) and the pid at the top of its tree, None when
        it runs no process now."""
        now = time.monotonic()
        if now < self.next_at:
            return
        self.next_at = now + self.every_s
        wall = time.time()
        for key, pid in pids.items():
            if pid is None:
                continue
            members = process_tree(pid)
            cpu, rss = tree_usage(pid, members)
            if not rss:
                continue
            values = {"system/rss_mib": round(rss / 2**20, 2), **self.gpus.of(set(members))}
            before = self.previous.get(key)
            if before is not None and before[0] == pid and now > before[1]:
                values["system/cpu_percent"] = round(max(0.0, cpu - before[2]) / (now - before[1]) * 100, 1)
            self.previous[key] = (pid, now, cpu)
            self._write(key, {"step": None, "time": wall, "metrics": values})

    def _write(self, key: str, point: dict) -> None:
        path = self.metrics_dir / f"{key}{SYSTEM_INFIX}.jsonl"
        try:
            path.parent.mkdir(exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                os.write(fd, (json.dumps(point, separators=(",", ":")) + "\n").encode())
            finally:
                os.close(fd)
            self.failing = False
        except OSError as error:  # a full disk must not stop the run
            if not self.failing:
                log.warning("cannot write system metrics (%s); retrying every %g s", error, self.every_s)
            self.failing = True
