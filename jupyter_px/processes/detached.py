"""Detached helper processes: the local supervisor, the Kubernetes follower, TensorBoard.

Each of them outlives whoever started it (a kernel, the CLI, the Jupyter server), so each is
started the same way, and found again the same way:

* **Start behind a go-pipe.** `start("pkg.module", args, ...)` runs `python -m pkg.module ARGS`
  in a session of its own (its own process group: a signal to the starter's group is not for
  it), with the read end of a pipe named by `$JUPYTER_PX_GO_FD`. The child calls `await_go()`
  first thing: it blocks until its starter has recorded who it is and said "go"; end of file
  without "go" (the starter gave up, or died, half way) means the start was abandoned, and the
  child exits having done nothing. So there is never a helper that nobody knows about.
* **Identity by pid and create time.** `start` returns the child's `ProcessIdentity`: its pid
  and the kernel's creation time of that process, both known as soon as `Popen` returns (the
  creation time is set at fork and kept through exec). A pid alone may be a later, unrelated
  process; a pid with the same creation time is the same process. So a helper forked a moment
  ago, still inside exec (no command line yet), is already itself: nothing reads /proc command
  lines to guess, and nothing has to wait for the child to write a pid file.
* **Liveness** is `identity.alive()`: that process exists and is not a zombie.
* **A stop request** is `request_stop(identity)`: a signal (SIGTERM) to that process only, and
  only if it is still the same process and handles the signal (one still starting up, before it
  installed its handler, would be killed instead; it reads its stop file when it gets there).
  `terminate(identity)` ends it and its process group for good: SIGTERM, then SIGKILL.
* **Reaping by the starter.** The child is the starter's child until the starter exits; a
  daemon thread waits for it, so a long-lived starter (the Jupyter server, a kernel) collects
  no zombies, and `Started.exit_code` says how it ended.
"""

from __future__ import annotations

import os
import signal
import site
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from . import start_time

#: The environment variable naming the go-pipe's read end in the child.
GO_FD_ENV = "JUPYTER_PX_GO_FD"
GO = b"go"


@dataclass(frozen=True)
class ProcessIdentity:
    """One process, told apart from any later process with the same pid.

    `started_at` is when the process started, in seconds since boot (`start_time.since_boot`:
    fixed for its life, which psutil's wall-clock creation time is not), or, in a record written
    by an older version, its wall-clock creation time. None only for a pid recorded before
    either was: such an identity is judged by its pid alone.
    """

    pid: int
    started_at: float | None

    @classmethod
    def of(cls, pid: int) -> ProcessIdentity:
        """The identity of live process `pid` now (raises psutil.NoSuchProcess if there is none)."""
        return cls(pid, start_time.since_boot(pid))

    @classmethod
    def current(cls) -> ProcessIdentity:
        return cls.of(os.getpid())

    def same_as(self, other: ProcessIdentity) -> bool:
        """The same process: the same pid, started at the same time (None matches by pid alone)."""
        if self.pid != other.pid:
            return False
        if self.started_at is None or other.started_at is None:
            return True
        return start_time.same_start(self.started_at, other.started_at)

    def alive(self) -> bool:
        """Is this process still running? (Not a zombie, not a reused pid.) A process we may not
        inspect (another user's) with the right pid counts as alive: we cannot tell otherwise."""
        if self.pid <= 0:
            return False
        try:
            if self.started_at is not None and not start_time.matches(self.started_at, self.pid):
                return False
            return psutil.Process(self.pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False
        except psutil.AccessDenied:
            return True


def await_go() -> bool:
    """The child's first step: block until the starter says "go" (True) or gave up (False).

    True at once when the process was not started by `start` (no go-pipe: run by hand). The
    variable is removed from the environment, so the child's own children do not inherit it."""
    text = os.environ.pop(GO_FD_ENV, None)
    if not text:
        return True
    fd = int(text)
    data = b""
    try:
        while chunk := os.read(fd, 16):
            data += chunk
    finally:
        os.close(fd)
    return data.startswith(GO)


class Started:
    """A child just started by `start`, waiting for `go()`. Use it as a context manager: leaving
    the block without `go()` abandons the start (the child exits, having started nothing)."""

    def __init__(self, popen: subprocess.Popen, identity: ProcessIdentity, go_fd: int):
        self.popen = popen
        self.identity = identity
        self._go_fd: int | None = go_fd

    @property
    def pid(self) -> int:
        return self.identity.pid

    def go(self) -> bool:
        """Let the child run (call it once its identity is recorded where others look for it).

        False when the child had already died (its interpreter failed to start, so the pipe has
        no reader): not an error of the starter's, whose record of the child now names a dead
        process, which is what a keeper finds and reports (with the child's log)."""
        if self._go_fd is None:
            raise RuntimeError(f"process {self.pid} was already let go or abandoned")
        try:
            os.write(self._go_fd, GO)
            return True
        except BrokenPipeError:
            return False
        finally:
            self.abandon()

    def abandon(self) -> None:
        """Close the pipe without "go": the child exits without doing anything."""
        if self._go_fd is not None:
            os.close(self._go_fd)
            self._go_fd = None

    @property
    def exit_code(self) -> int | None:
        """How the child ended (negative: killed by that signal), None while it runs."""
        return self.popen.poll()

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the child to end; its exit code (raises subprocess.TimeoutExpired)."""
        return self.popen.wait(timeout)

    def __enter__(self) -> Started:
        return self

    def __exit__(self, *exc: object) -> None:
        self.abandon()


def start(
    module: str,
    args: Sequence[str] = (),
    *,
    log_path: os.PathLike | str,
    cwd: os.PathLike | str | None = None,
    env: Mapping[str, str] | None = None,
    append_log: bool = True,
) -> Started:
    """Start `python -m module ARGS` detached (its own session), stdout+stderr to `log_path`,
    waiting for `go()`. `env`: its whole environment (default: this process's). The starter
    reaps it (a daemon thread waits for it)."""
    go_read, go_write = os.pipe()
    environ = dict(os.environ if env is None else env)
    environ[GO_FD_ENV] = str(go_read)
    try:
        with open(log_path, "ab" if append_log else "wb") as log_file:
            popen = subprocess.Popen(
                [sys.executable, "-m", module, *args],
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                cwd=None if cwd is None else str(cwd),
                env=environ,
                start_new_session=True,
                pass_fds=(go_read,),
                close_fds=True,
            )
    except BaseException:
        os.close(go_write)
        raise
    finally:
        os.close(go_read)
    try:  # the child waits for "go", so it is alive (or a zombie, which we reap): never NoSuchProcess
        identity = ProcessIdentity.of(popen.pid)
    except psutil.Error:
        identity = ProcessIdentity(popen.pid, None)
    threading.Thread(target=popen.wait, name=f"px-reap-{popen.pid}", daemon=True).start()
    if len(_children) >= _KEEP_CHILDREN:  # a long-lived starter (the Jupyter server) forgets ended ones
        for known in [key for key, old in _children.items() if old.popen.returncode is not None]:
            del _children[known]
    started = _children[identity] = Started(popen, identity, go_write)
    return started


_KEEP_CHILDREN = 256


#: Every child this process started, by identity: how it ended stays known to its starter.
_children: dict[ProcessIdentity, Started] = {}


def children() -> list[Started]:
    """The children this process started (the last ones, running or ended), oldest first."""
    return list(_children.values())


def child(identity: ProcessIdentity) -> Started | None:
    """The child this process started as `identity`, if it did (to wait for it, read its exit
    code); None for a process started elsewhere."""
    return _children.get(identity)


def exit_now(code: int) -> None:
    """Flush stdout/stderr and leave without the interpreter's shutdown (`os._exit`). For a helper
    whose daemon threads may be inside a write to stderr right now: CPython aborts ("could not
    acquire lock ... at interpreter shutdown") when one holds that lock as it finalizes."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed, or its pipe is gone
            pass
    os._exit(code)


def importable_environ(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (default: this process's environment) with this package importable by `python -m`
    from any directory: a source checkout's parent is added to PYTHONPATH (an installed package
    needs nothing)."""
    env = dict(os.environ if base is None else base)
    package_parent = str(Path(__file__).resolve().parents[2])  # jupyter_px/processes/detached.py -> the checkout
    site_dirs = {str(Path(p).resolve()) for p in [*site.getsitepackages(), site.getusersitepackages()]}
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if package_parent not in site_dirs and package_parent not in parts:
        env["PYTHONPATH"] = os.pathsep.join([package_parent, *parts])
    return env


def catches_signal(pid: int, signum: int) -> bool:
    """Has process `pid` installed a handler for `signum` (SigCgt in /proc/PID/status)? True where
    that cannot be read (not Linux), so callers fall back to signalling."""
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    except (OSError, ValueError, IndexError):
        pass
    return True


def request_stop(identity: ProcessIdentity, signum: int = signal.SIGTERM) -> bool:
    """Ask the process to stop: `signum` to it alone, if it is still that process and handles
    the signal. Whether the request was delivered."""
    if not identity.alive() or not catches_signal(identity.pid, signum):
        return False
    try:
        os.kill(identity.pid, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def terminate(identity: ProcessIdentity, timeout: float = 5.0) -> bool:
    """End the process and its process group (it leads one: `start` gives it its own session):
    SIGTERM, then SIGKILL after `timeout` s. Whether it was running."""
    if not identity.alive():
        return False
    try:
        group = os.getpgid(identity.pid)
    except ProcessLookupError:
        return False

    def send(signum: int) -> None:
        try:
            if group == identity.pid:
                os.killpg(group, signum)
            else:
                os.kill(identity.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    send(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while identity.alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    if identity.alive():
        send(signal.SIGKILL)
        deadline = time.monotonic() + timeout
        while identity.alive() and time.monotonic() < deadline:
            time.sleep(0.02)
    return True
