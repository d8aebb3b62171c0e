"""Memory limits without cgroups: watch each replica's process-tree RSS and report the excess.

The supervisor polls this a few times a second while some replica has a memory limit, and
kills a replica whose tree (the replica and everything it started) is above its limit,
recording it as OOMKilled like Kubernetes would. Each poll reads the process table once
(`ProcessTable`: parent and RSS of every process from /proc), whatever the number of replicas,
so a run with many limited replicas does not keep the supervisor busy.

RSS counts pages shared between a parent and its forked children more than once, so a tree of
forks reads slightly high; that errs on the side of enforcing. An address-space rlimit is not
used: frameworks reserve far more virtual memory than they touch (TensorFlow, CUDA), and it
would fail them at start.

A warm replica (forked from a template that imported torch) starts with the template's pages
mapped, about 150 MiB of them before it has done anything. Those pages are the template's: a
replica is charged for its tree's RSS less what it shared with the template when it was forked
(`MemoryGuard.inherited`), as a cgroup charges a page to whoever first touched it. A replica
that fills memory is killed as OOMKilled at the same point, warm or cold.

For an MPI launcher (`mpirun`), each rank below it is charged to its worker's limit instead of
the launcher's, because on Kubernetes the ranks run in the worker pods.

`MemoryGuard` is what the supervisor holds: the run's limits, when the next poll is due, and
which replicas are over (`Overuse`); the supervisor does the killing and the recording.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
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


class ProcessTable:
    """Parent and resident memory of every process, read in one pass."""

    def __init__(self) -> None:
        self.rss: dict[int, int] = {}
        self.children: dict[int, list[int]] = {}
        if os.path.isdir("/proc/self"):
            self._read_proc()
        else:  # not Linux: psutil does the same, more slowly
            for proc in psutil.process_iter(["ppid", "memory_info"]):
                info = proc.info
                if info.get("memory_info") is not None:
                    self._add(proc.pid, info["ppid"] or 0, info["memory_info"].rss)

    def _add(self, pid: int, ppid: int, rss: int) -> None:
        self.rss[pid] = rss
        self.children.setdefault(ppid, []).append(pid)

    def _read_proc(self) -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        with os.scandir("/proc") as entries:
            for entry in entries:
                if not entry.name.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry.name}/stat", "rb") as handle:
                        data = handle.read()
                except OSError:  # exited meanwhile
                    continue
                fields = data[data.rfind(b")") + 2 :].split()  # after "pid (comm) ": field 3 onwards
                if len(fields) > 21:
                    self._add(int(entry.name), int(fields[1]), int(fields[21]) * page)  # ppid, rss (pages)

    def descendants(self, pid: int) -> list[int]:
        """Every process below `pid` (a replica is a child subreaper: what it started, whatever
        session or group it took, is below it while it runs)."""
        found, stack = [], list(self.children.get(pid, ()))
        while stack:
            current = stack.pop()
            found.append(current)
            stack.extend(self.children.get(current, ()))
        return found

    def tree_rss_mib(self, pid: int, exclude: set[int] | frozenset[int] = frozenset()) -> float:
        """RSS of `pid` and its descendants, leaving out the subtrees rooted at `exclude`."""
        total, stack = 0, [pid]
        while stack:
            current = stack.pop()
            total += self.rss.get(current, 0)
            stack.extend(child for child in self.children.get(current, ()) if child not in exclude)
        return total / MIB

    def check(
        self, pid: int, limit_mib: float, exclude: set[int] | frozenset[int] = frozenset(), inherited_mib: float = 0.0
    ) -> Excess | None:
        """`pid`'s tree against `limit_mib`, less what it shares with the template it was forked
        from (`inherited_mib`: a page is the template's, as a cgroup charges it to whoever
        first touched it)."""
        rss = max(0.0, self.tree_rss_mib(pid, exclude) - inherited_mib)
        return Excess(pid, rss, limit_mib) if rss > limit_mib else None


class MpiRanks:
    """Finds the rank processes under an mpirun, caching each pid's rank (read once from environ)."""

    def __init__(self) -> None:
        self._rank_of: dict[int, int] = {}

    def ranks(self, table: ProcessTable, launcher_pid: int) -> dict[int, int]:
        """{pid: rank} for the launcher's children that are MPI ranks."""
        found = {}
        for pid in table.children.get(launcher_pid, ()):
            rank = self._rank_of.get(pid)
            if rank is None:  # not cached: a rank seen before its exec has mpirun's environment
                try:
                    value = psutil.Process(pid).environ().get("OMPI_COMM_WORLD_RANK", "")
                except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
                    continue
                if not value.isdigit():
                    continue
                rank = self._rank_of[pid] = int(value)
            found[pid] = rank
        return found


@dataclass(frozen=True)
class Overuse:
    """A replica to fail as OOMKilled; `kill_pids` are processes to kill first (an MPI rank)."""

    role: str
    index: int
    message: str
    kill_pids: tuple[int, ...] = ()


class MemoryGuard:
    """The memory limits of one run's replicas: which trees to watch, when to look, what is over.

    `limits` maps (role, index) to a limit in MiB (None or 0: no limit). `mpi_processes_per_replica`
    is set for an MPI run: the launcher's ranks are then charged to the workers they stand for
    (rank // processes per replica), not to the launcher.
    """

    def __init__(
        self,
        limits: Mapping[tuple[str, int], float | None],
        *,
        poll_s: float,
        mpi_processes_per_replica: int | None = None,
    ):
        self.limits = {key: float(limit) for key, limit in limits.items() if limit}
        self.poll_s = poll_s
        self.mpi_ppr = mpi_processes_per_replica
        self.next_poll = 0.0
        self._ranks = MpiRanks()
        self._workers_limited = any(role == "worker" for role, _ in self.limits)
        #: Per pid, the resident memory a warm replica shared with its template when forked (MiB).
        self.inherited: dict[int, float] = {}

    def watches(self, role: str, index: int) -> bool:
        """Does this replica's tree have a limit to watch (its own, or its MPI ranks')?"""
        if (role, index) in self.limits:
            return True
        return self.mpi_ppr is not None and role == "master" and self._workers_limited

    def poll(self, running: Sequence[tuple[str, int, int]], now: float) -> list[Overuse]:
        """What is over its limit among `running` ((role, index, pid) of watched replicas).
        Reads the process table at most once every `poll_s`, however many replicas."""
        if not running or now < self.next_poll:
            return []
        self.next_poll = now + self.poll_s
        table = ProcessTable()
        found = []
        for role, index, pid in running:
            exclude: set[int] = set()
            if self.mpi_ppr is not None and role == "master":
                ranks = self._ranks.ranks(table, pid)
                exclude = set(ranks)
                found.extend(self._over_limit_ranks(table, ranks))
            limit = self.limits.get((role, index))
            excess = table.check(pid, limit, exclude, self.inherited.get(pid, 0.0)) if limit else None
            if excess is not None:
                found.append(Overuse(role, index, excess.describe(f"{role}-{index}")))
        return found

    def _over_limit_ranks(self, table: ProcessTable, ranks: Mapping[int, int]) -> list[Overuse]:
        assert self.mpi_ppr is not None
        found = []
        for pid, rank in ranks.items():
            worker = rank // self.mpi_ppr
            limit = self.limits.get(("worker", worker))
            excess = table.check(pid, limit) if limit else None
            if excess is not None:
                message = excess.describe(f"MPI rank {rank} (worker-{worker})")
                found.append(Overuse("worker", worker, message, kill_pids=(pid,)))
        return found
