"""Process plumbing shared by the supervisor, its watchdog and the backend.

Every replica is started as the leader of its own process group, with the parent-death signal
set to SIGTERM (`prctl(PR_SET_PDEATHSIG)`), so killing the supervisor, even with SIGKILL, stops
the replica too: SIGTERM first, so that it writes the metric points it holds, then the
supervisor's watchdog kills what is left once the replicas are done or the stop's grace is up.
Whatever a replica starts stays in its group (unless it leaves on purpose), so a signal to the
group reaches it. What leaves its group and session (setsid, a double fork) cannot leave its
replica's process tree: each replica is a child subreaper (`PR_SET_CHILD_SUBREAPER`, kept through
exec), so an orphaned descendant is handed to the replica, not to init, and is counted against
the replica's memory limit and killed with it (`memory.py`, `oom_kills.py`); once the replica is
gone they go to the supervisor, the next subreaper, which kills them. Anything that escapes even
that is in the run's cgroup where the machine has one (`cgroups.py`), and otherwise found by its
`PX_RUN_ID`.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import psutil

from ...forkserver.fresh import RESET_BEFORE_EXEC
from .cgroups import join

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

_libc = None


def _prctl(option: int, value: int) -> None:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))


def set_parent_death_signal(signum: int = signal.SIGTERM) -> None:
    """Have the kernel send `signum` to this process when its parent dies (Linux only)."""
    try:
        _prctl(PR_SET_PDEATHSIG, int(signum))
    except (OSError, AttributeError):
        pass


def become_subreaper() -> None:
    """Adopt orphaned descendants (e.g. a daemonised child of a replica) so none outlive the run."""
    try:
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
    except (OSError, AttributeError):
        pass


def load_libc() -> None:
    """Load libc before forking, so the child's pre-exec hook does no dynamic loading."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)


class _ChildSetup:
    """Runs in the forked child just before exec: death signal, affinity, default signals."""

    def __init__(self, cpus: Iterable[int] | None, cgroup_procs: str | None = None):
        self.cpus = set(cpus) if cpus else None
        self.parent = os.getpid()
        self.cgroup_procs = cgroup_procs

    def __call__(self) -> None:
        for signum in RESET_BEFORE_EXEC:
            signal.signal(signum, signal.SIG_DFL)  # ignored signals would stay ignored through exec
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        set_parent_death_signal(signal.SIGTERM)
        become_subreaper()  # what the replica starts stays in its tree, whatever session it takes
        if os.getppid() != self.parent:  # the supervisor died before the signal was armed
            os._exit(1)
        if self.cpus and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, self.cpus)
        if self.cgroup_procs:  # before exec: everything the replica starts is in the run's cgroup
            join(self.cgroup_procs)


def spawn(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str,
    log_path: os.PathLike,
    cpus: Iterable[int] | None = None,
    cgroup_procs: str | None = None,
) -> subprocess.Popen:
    """Start `argv` in its own process group (and the cgroup whose `cgroup.procs` is given),
    stdout+stderr appended to `log_path`.

    The caller reaps it (os.waitpid) and must then set `returncode` on the returned object.
    """
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    try:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            cwd=cwd,
            env=dict(env),
            process_group=0,
            preexec_fn=_ChildSetup(cpus, cgroup_procs),
            close_fds=True,
        )
    finally:
        os.close(log_fd)


@dataclass(frozen=True)
class ExitInfo:
    """A decoded wait status: exit code as a shell reports it (128+N for signal N)."""

    exit_code: int
    signal: str | None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.signal is None

    def describe(self) -> str:
        return f"killed by {self.signal}" if self.signal else f"exited with code {self.exit_code}"


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def decode_wait_status(status: int) -> ExitInfo:
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        return ExitInfo(128 + signum, signal_name(signum))
    return ExitInfo(os.waitstatus_to_exitcode(status), None)


def kill_group(pgid: int, signum: int) -> bool:
    """Signal a process group; False when it no longer exists."""
    try:
        os.killpg(pgid, signum)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return False


def is_alive(pid: int | None) -> bool:
    """A live, non-zombie process (zombies are dead: they only wait to be reaped)."""
    if not pid:
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def run_processes(run_id: str, exclude: Iterable[int] = ()) -> list[psutil.Process]:
    """Every live process whose environment says it belongs to `run_id` (PX_RUN_ID)."""
    skip = set(exclude) | {os.getpid()}
    found = []
    for proc in psutil.process_iter(["pid"]):
        if proc.pid in skip:
            continue
        try:
            if proc.environ().get("PX_RUN_ID") == run_id and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
    return found


def kill_run_processes(run_id: str, pgids: Iterable[int] = (), exclude: Iterable[int] = ()) -> int:
    """SIGKILL the run's process groups and any process carrying its PX_RUN_ID. Returns how many."""
    killed = 0
    for pgid in set(pgids):
        if pgid and kill_group(pgid, signal.SIGKILL):
            killed += 1
    for proc in run_processes(run_id, exclude):
        try:
            proc.kill()
            killed += 1
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return killed
