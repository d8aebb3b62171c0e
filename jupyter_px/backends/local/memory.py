"""Memory limits without cgroups: watch each replica's process-tree RSS and report the excess.

The supervisor polls this a few times a second for replicas that have a memory limit, and
kills a replica whose tree (the replica and everything it started) is above its limit,
recording it as OOMKilled like Kubernetes would. RSS counts pages shared between a parent and
its forked children more than once, so a tree of forks reads slightly high; that errs on the
side of enforcing. An address-space rlimit is not used: frameworks reserve far more virtual
memory than they touch (TensorFlow, CUDA), and it would fail them at start.

For an MPI launcher (`mpirun`), each rank below it is charged to its worker's limit instead of
the launcher's, because on Kubernetes the ranks run in the worker pods.
"""

from __future__ import annotations

from dataclasses import dataclass

import psutil

MIB = 2**20


@dataclass(frozen=True)
class Excess:
    """A process tree above its limit."""

    pid: int
    rss_mib: float
    limit_mib: float

    def describe(self, who: str) -> str:
        return f"{who} used {self.rss_mib:.0f} MiB, above its memory limit of {self.limit_mib:.0f} MiB"


def _rss(proc: psutil.Process) -> int:
    try:
        return proc.memory_info().rss
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return 0


def tree_rss_mib(pid: int, exclude: set[int] | None = None) -> float:
    """RSS of `pid` and its descendants, leaving out the subtrees rooted at `exclude` pids."""
    try:
        root = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return 0.0
    total = _rss(root)
    if exclude:
        stack = [root]
        while stack:
            parent = stack.pop()
            try:
                children = parent.children()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            for child in children:
                if child.pid in exclude:
                    continue
                total += _rss(child)
                stack.append(child)
    else:
        try:
            total += sum(_rss(child) for child in root.children(recursive=True))
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total / MIB


def check(pid: int, limit_mib: float, exclude: set[int] | None = None) -> Excess | None:
    rss = tree_rss_mib(pid, exclude)
    return Excess(pid, rss, limit_mib) if rss > limit_mib else None


class MpiRanks:
    """Finds the rank processes under an mpirun, caching each pid's rank (read once from environ)."""

    def __init__(self) -> None:
        self._rank_of: dict[int, int] = {}

    def ranks(self, launcher_pid: int) -> dict[int, int]:
        """{pid: rank} for the launcher's children that are MPI ranks."""
        try:
            children = psutil.Process(launcher_pid).children()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return {}
        found = {}
        for child in children:
            rank = self._rank_of.get(child.pid)
            if rank is None:  # not cached: a rank seen before its exec has mpirun's environment
                try:
                    value = child.environ().get("OMPI_COMM_WORLD_RANK", "")
                except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
                    continue
                if not value.isdigit():
                    continue
                rank = self._rank_of[child.pid] = int(value)
            found[child.pid] = rank
        return found
