"""A cgroup (v2) per local run, where the machine lets us make one: what the kernel knows of
every process a run started, however it left (setsid, a double fork, `execve` with an emptied
environment). The supervisor's watchdog kills the cgroup (`cgroup.kill`) when the supervisor dies,
and so does `reconcile`; the `PX_RUN_ID` scan (`process.kill_run_processes`) stays as the fallback
where there is no writable cgroup v2 hierarchy (no root, cgroup v1 only, a container without
delegation).

Layout: `<the supervisor's own cgroup>/jupyter-px-<run_id>`, holding the replicas (each joins
before it execs, so nothing it starts is ever outside) but not the supervisor or its watchdog.
A supervisor started from inside another run's replica moves itself out to its parent cgroup
first: a run submitted from a replica is not the outer run's to kill. The run directory's
`cgroup` file says where the run's cgroup is, for a later `reconcile` in another process.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

#: Name of a run's cgroup: PREFIX + run id.
PREFIX = "jupyter-px-"
#: `PX_RUN_CGROUPS=0` makes no cgroup for a run, as on a host where cgroup v2 is not writable.
CGROUPS_ENV = "PX_RUN_CGROUPS"
#: The file in a run directory that records the run's cgroup path.
CGROUP_FILE = "cgroup"
_PROC_CGROUP = "/proc/self/cgroup"
_MOUNTS = "/proc/self/mounts"


def _unified_mount() -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (`/sys/fs/cgroup`, or `.../unified` on hybrid hosts)."""
    try:
        with open(_MOUNTS) as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) > 2 and fields[2] == "cgroup2":
                    return Path(fields[1])
    except OSError:
        pass
    return None


def _own_cgroup() -> str | None:
    """This process's cgroup v2 path ("/..." from the `0::` line), or None."""
    try:
        with open(_PROC_CGROUP) as lines:
            for line in lines:
                if line.startswith("0::"):
                    return line[3:].strip()
    except OSError:
        pass
    return None


class RunCgroup:
    """One run's cgroup: join (from a replica's pre-exec hook), list, kill, remove."""

    def __init__(self, path: Path):
        self.path = Path(path)

    @property
    def procs_file(self) -> str:
        return str(self.path / "cgroup.procs")

    @classmethod
    def create(cls, run_id: str, run_dir: Path) -> RunCgroup | None:
        """The run's cgroup, made under this process's own (leaving another run's first); None
        where cgroups cannot be used (the reason is logged; the PX_RUN_ID scan remains)."""
        if os.environ.get(CGROUPS_ENV, "").strip() == "0":
            log.info(
                "run %s: run cgroups are off (%s=0); the subreaper and the PX_RUN_ID scan remain", run_id, CGROUPS_ENV
            )
            return None
        mount, own = _unified_mount(), _own_cgroup()
        if mount is None or own is None:
            log.info("run %s: no cgroup v2 hierarchy; its processes are found by PX_RUN_ID", run_id)
            return None
        parent = mount / own.lstrip("/")
        try:
            if parent.name.startswith(PREFIX):  # started inside another run's replica: leave it
                parent = parent.parent
                (parent / "cgroup.procs").write_text(str(os.getpid()))
            path = parent / f"{PREFIX}{run_id}"
            path.mkdir(exist_ok=True)
            (run_dir / CGROUP_FILE).write_text(str(path))
        except OSError as error:
            log.info("run %s: no cgroup (%s); its processes are found by PX_RUN_ID", run_id, error)
            return None
        return cls(path)

    @classmethod
    def of_run(cls, run_dir: Path) -> RunCgroup | None:
        """The cgroup recorded for a run, if it still exists."""
        try:
            path = Path((run_dir / CGROUP_FILE).read_text().strip())
        except OSError:
            return None
        return cls(path) if (path / "cgroup.procs").exists() else None

    def pids(self) -> list[int]:
        try:
            return [int(line) for line in Path(self.procs_file).read_text().split()]
        except (OSError, ValueError):
            return []

    def release(self, pid: int) -> bool:
        """Move a process out, to the parent cgroup (the owner of another run, started from a
        replica, is not this run's to kill)."""
        try:
            (self.path.parent / "cgroup.procs").write_text(str(pid))
            return True
        except OSError:
            return False

    def kill(self, timeout: float = 10.0, spare: Callable[[int], bool] | None = None) -> int:
        """SIGKILL every process in the cgroup (`cgroup.kill` where the kernel has it, else
        frozen, then each one), but first move out those `spare` says to keep; how many were killed."""
        if spare is not None:
            for pid in self.pids():
                if spare(pid):
                    self.release(pid)
        found = len(self.pids())
        if not found:
            return 0
        try:
            (self.path / "cgroup.kill").write_text("1")
        except OSError:
            frozen = self._write("cgroup.freeze", "1")  # no forks while we kill
            for pid in self.pids():
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            if frozen:
                self._write("cgroup.freeze", "0")
        deadline = time.monotonic() + timeout
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.01)
        return found

    def remove(self) -> None:
        """Remove the (empty) cgroup and its record; a cgroup still in use stays."""
        try:
            self.path.rmdir()
        except OSError:
            pass

    def _write(self, name: str, value: str) -> bool:
        try:
            (self.path / name).write_text(value)
            return True
        except OSError:
            return False


def leave_run_cgroup(pid: int) -> None:
    """Move `pid` out of the run cgroup it is in, if any, to that cgroup's parent: the owner of
    a run submitted from inside another run's replica, before it may run."""
    mount = _unified_mount()
    try:
        with open(f"/proc/{pid}/cgroup") as lines:
            own = next((line[3:].strip() for line in lines if line.startswith("0::")), None)
    except OSError:
        return
    if mount is None or own is None:
        return
    path = mount / own.lstrip("/")
    if path.name.startswith(PREFIX):
        RunCgroup(path).release(pid)


def join(procs_file: str) -> None:
    """Move the calling process into a cgroup (in a child between fork and exec: no Python
    objects beyond the file, nothing that can raise past this)."""
    try:
        fd = os.open(procs_file, os.O_WRONLY)
        try:
            os.write(fd, str(os.getpid()).encode())
        finally:
            os.close(fd)
    except OSError:
        pass  # the PX_RUN_ID scan remains
