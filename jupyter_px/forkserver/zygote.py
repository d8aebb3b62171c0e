"""The zygote: a pristine copy of the template that forks an owner's children on request.

The owner (the run's supervisor) must be the parent of its replicas: it reaps them with
`waitpid`, it is their child subreaper, and their parent-death signal is armed against it. Yet
the owner imports its own modules (pydantic, the run store), which must not be in a replica's
`sys.modules`. So before it imports anything, the owner forks this zygote, and a replica is
made by a double fork from it: the zygote forks an intermediate, which forks the replica and
exits at once; the orphaned replica is handed by the kernel to its nearest child-subreaper
ancestor, the owner. The replica waits until it is the owner's (`fresh.wait_for_parent`), arms
its parent-death signal against it, checks the owner is still alive, and then becomes the
process the owner asked for (`fresh`), exactly as a cold start's pre-exec hook and exec would.

The owner's side is `Zygote`: `spawn_many(...)` sends its requests and returns each replica's pid
(already in its own process group, set by the intermediate before the pid is reported, so a
signal to the group can never miss it) and the memory it inherited from the template.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from . import fresh, wire

#: The environment variable naming the owner's end of its zygote's control socket.
ZYGOTE_FD_ENV = "JUPYTER_PX_ZYGOTE_FD"
#: What `ps` calls a zygote (its children get the template's name back).
ZYGOTE_NAME = "px-zygote"


@dataclass(frozen=True)
class Forked:
    """A process the zygote forked: its pid (and process group) and the resident memory it
    shared with the template when it was forked (MiB), which belongs to the template."""

    pid: int
    inherited_mib: float


class ZygoteGone(OSError):
    """The zygote is not there to fork (it died, or its socket closed)."""


class Zygote:
    """The owner's end: ask for children, close to let the zygote go."""

    def __init__(self, sock: socket.socket, pid: int | None = None):
        self.sock = sock
        self.pid = pid

    @classmethod
    def from_environ(cls) -> Zygote | None:
        """The zygote this process was given by the template (the variable is removed, so
        nothing this process starts inherits it); None when started cold."""
        text = os.environ.pop(ZYGOTE_FD_ENV, "")
        pid_text, _, fd_text = text.partition(":")
        if not fd_text.isdigit():
            return None
        sock = socket.socket(fileno=int(fd_text))
        os.set_inheritable(sock.fileno(), False)
        return cls(sock, int(pid_text) if pid_text.isdigit() else None)

    @staticmethod
    def request(
        entry: str,
        args: Sequence[str],
        *,
        argv0: str,
        env: Mapping[str, str],
        cwd: str,
        log_path: str,
        cpus: Sequence[int] | None = None,
        cgroup_procs: str | None = None,
        parent_death_signal: int = signal.SIGKILL,
        subreaper: bool = False,
    ) -> dict[str, Any]:
        """One child to fork: run `entry(args)` as `python -m <argv0's module> ARGS` would, in
        `cwd` with exactly `env`, its output appended to `log_path`, pinned to `cpus`, inside the
        cgroup whose `cgroup.procs` is given, its parent-death signal armed against the caller,
        a child subreaper if asked (its orphaned descendants stay in its tree), with the caller's
        niceness, resource limits and umask (as an exec'd child inherits them)."""
        return {
            "attributes": fresh.process_attributes(),
            "entry": entry,
            "args": list(args),
            "argv0": argv0,
            "env": dict(env),
            "cwd": cwd,
            "log": log_path,
            "cpus": list(cpus) if cpus else None,
            "cgroup_procs": cgroup_procs,
            "parent_death_signal": int(parent_death_signal),
            "subreaper": subreaper,
            "owner": os.getpid(),
        }

    def spawn_many(self, requests: Sequence[dict[str, Any]]) -> list[Forked]:
        """Fork a child per request (`request(...)`): all are sent before any answer is read,
        so the zygote forks them back to back."""
        try:
            for request in requests:
                wire.send(self.sock, request)
            replies = [wire.receive(self.sock)[0] for _ in requests]
        except OSError as error:
            raise ZygoteGone(f"the zygote does not answer: {error}") from None
        for reply in replies:
            if "error" in reply:
                raise ZygoteGone(str(reply["error"]))
        return [Forked(int(reply["pid"]), float(reply.get("inherited_mib") or 0.0)) for reply in replies]

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def _resident_mib() -> float:
    """This process's resident memory now (what a child forked from it starts with)."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


def serve(
    sock: socket.socket, dispositions: Mapping[int, Any], library_fds: set[int], loggers: Sequence[str]
) -> NoReturn:
    """The zygote's loop: one child per request, until the owner closes the socket (or dies:
    the parent-death signal was armed by whoever forked the zygote)."""
    name = fresh.process_name()
    fresh.set_process_name(ZYGOTE_NAME)
    while True:
        batch = []
        try:
            batch.append(wire.receive(sock)[0])
            while select.select([sock], [], [], 0)[0]:  # the owner sent several: fork them back to back
                batch.append(wire.receive(sock)[0])
        except OSError:
            if not batch:
                os._exit(0)
        forks: list[tuple[int, int] | Exception] = []
        for request in batch:
            try:
                forks.append(_fork_intermediate(sock, request, dispositions, library_fds, loggers, name))
            except Exception as error:  # reported to the owner, which falls back to a cold start
                forks.append(error)
        for started in forks:
            reply: dict[str, Any]
            try:
                if isinstance(started, Exception):
                    raise started
                reply = {"pid": _child_of(*started), "inherited_mib": _resident_mib()}
            except Exception as error:
                reply = {"error": f"{type(error).__name__}: {error}"}
            try:
                wire.send(sock, reply)
            except OSError:
                os._exit(0)


def _fork_intermediate(
    sock: socket.socket,
    request: Mapping[str, Any],
    dispositions: Mapping[int, Any],
    library_fds: set[int],
    loggers: Sequence[str],
    name: str,
) -> tuple[int, int]:
    """Fork the intermediate, which forks the child, gives it its own group, writes its pid to
    a pipe and exits at once; (the intermediate's pid, the pipe's read end)."""
    read_end, write_end = os.pipe()
    middle = os.fork()
    if middle == 0:
        code = 1
        try:
            os.close(read_end)
            child = os.fork()
            if child == 0:
                os.close(write_end)
                fresh.set_process_name(name)
                become_child(sock, request, dispositions, library_fds, loggers)
            try:
                os.setpgid(child, child)  # also done by the child: whichever runs first
            except OSError:
                pass
            os.write(write_end, str(child).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    return middle, read_end


def _child_of(middle: int, read_end: int) -> int:
    """The child's pid, as its intermediate reported it (the intermediate reaped)."""
    data = b""
    try:
        while chunk := os.read(read_end, 32):
            data += chunk
    finally:
        os.close(read_end)
        os.waitpid(middle, 0)
    if not data.isdigit():
        raise OSError("the intermediate process exited before it forked the child")
    return int(data)


def become_child(
    sock: socket.socket,
    request: Mapping[str, Any],
    dispositions: Mapping[int, Any],
    library_fds: set[int],
    loggers: Sequence[str],
) -> NoReturn:
    """In the child: what a cold start's pre-exec hook does (`backends/local/process.py`
    `_ChildSetup`: own group, signals, parent-death signal, affinity, cgroup), then what exec
    would give (`fresh`), then the entry point. A spawn-ahead pool's interpreter
    (`pool_member`) becomes its replica the same way, without the fork."""
    try:
        try:
            os.setpgid(0, 0)
        except OSError:
            pass
        owner = int(request["owner"])
        if not fresh.wait_for_parent(owner):
            os._exit(1)
        fresh.restore_signals(dispositions)
        fresh.prctl(fresh.PR_SET_PDEATHSIG, int(request.get("parent_death_signal") or signal.SIGKILL))
        if request.get("subreaper"):  # as a cold start's pre-exec hook makes it (local/process.py)
            fresh.prctl(fresh.PR_SET_CHILD_SUBREAPER, 1)
        if os.getppid() != owner:  # the owner died before the signal was armed
            os._exit(1)
        fresh.pin_threads(request.get("cpus"))
        if request.get("cgroup_procs"):  # before anything runs: all it starts is in the run's cgroup
            try:
                fd = os.open(request["cgroup_procs"], os.O_WRONLY)
                try:
                    os.write(fd, str(os.getpid()).encode())
                finally:
                    os.close(fd)
            except OSError:
                pass  # the PX_RUN_ID scan remains, as for a cold start
        sock.close()
        fresh.redirect_stdio(request["log"])
        fresh.close_fds(library_fds)
        fresh.take_on(request.get("attributes") or {})  # after close_fds, which reads the open-files limit
        fresh.forget_logging(loggers)
        fresh.replace_environment(request["env"], request["cwd"], request["argv0"], list(request["args"]))
        fresh.refresh_libraries()
    except BaseException as error:
        try:
            print(f"jupyter_px.forkserver: cannot set up the forked process: {error!r}", file=sys.stderr, flush=True)
        finally:
            os._exit(1)
    fresh.call_entry(request["entry"], list(request["args"]))
