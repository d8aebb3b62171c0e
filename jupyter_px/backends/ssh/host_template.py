"""`python -m jupyter_px.backends.ssh.host_template SOCKET PRELOAD IDLE_S FINGERPRINT`: a host's
warm template for the SSH backend's replicas.

The first replica of a run that can start warm (PyTorch, or no framework) on a host finds no
template there: it starts cold and starts this (`task_entry.Warm.start_template`, its own session,
told the replica's environment on stdin). The template takes that environment's variables read at
import (PYTHONUNBUFFERED, OMP_*...: `forkserver.pool.import_env`, re-executing itself with them),
imports the framework and the replica runner once, and listens on a Unix socket (0600, in a 0700
folder; a peer of another user is refused). A later replica's entry hands it its standard input,
output and error and its arguments; the template forks, and the fork *is* that entry from then
on: it binds the replica's port, says ready (`"launch": "warm (template pid N)"`), reads the start
line, forks the runner with torch already imported, and writes the exit record, on the ssh channel
it was given. The template tells the entry the fork's exit code. A fork whose replica environment
sets a variable read at import to another value than the template's starts its runner as a fresh
interpreter instead (its log says why) and retires the template, so that the next run's first
replica starts one that matches.

The template exits after IDLE_S seconds without a start once none of its forks runs, on SIGTERM,
on `stop`, or when an entry's fingerprint (`task_entry.fingerprint`: the interpreter, what is
installed, this package's files) is not its own: that entry starts cold and a new template.
One template serves a socket: a second one started beside it finds the lock taken and exits.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import select
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from ...forkserver.pool import import_env
from ...processes import file_lock
from . import task_entry

MODULE = "jupyter_px.backends.ssh.host_template"
#: Which variables of its environment the start line gave, across its re-execution.
TOLD_VARIABLE = "JUPYTER_PX_TEMPLATE_TOLD"


class HostTemplate:
    def __init__(
        self,
        socket_path: str,
        fingerprint: str,
        idle_s: float,
        lock: IO[str],
        told: set[str],
        imported_with: dict[str, str],
    ):
        self.socket_path, self.fingerprint, self.idle_s = socket_path, fingerprint, idle_s
        self.lock: IO[str] | None = lock  # held for the template's life: one template per socket
        #: the variables read at import it imported with, and which of them the start line gives
        #: (the rest come from the host's environment, which an entry's request carries)
        self.imported_with, self.told = imported_with, told
        self.children: dict[int, socket.socket] = {}
        self.last_start = time.monotonic()
        self.retiring = False
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(socket_path)
        self.listener.bind(socket_path)
        os.chmod(socket_path, 0o600)
        self.listener.listen(64)
        self.wakeup_read, self.wakeup_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(self.wakeup_write)
        signal.signal(signal.SIGCHLD, lambda _s, _f: None)
        signal.signal(signal.SIGTERM, lambda _s, _f: self.retire("SIGTERM"))

    def retire(self, why: str) -> None:
        """No more starts; exit once every fork has ended. The socket and the lock are let go at
        once: a new template can serve while this one's forks run on."""
        if not self.retiring:
            print(f"template pid {os.getpid()}: retiring: {why}", flush=True)
            self.retiring = True
            self.turn_away_queued(why)
            self.listener.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.socket_path)
            if self.lock is not None:
                self.lock.close()  # after the unlink: the next template binds a path of its own
                self.lock = None

    def turn_away_queued(self, why: str) -> None:
        """Tell the entries already queued on the socket why no start comes: closed unanswered,
        they read a reset connection and started cold saying the template "did not answer", where
        it was retiring (a run's replicas reach a host's template together, and the first one
        refused retires it before the others are answered)."""
        self.listener.setblocking(False)

        def refuse(conn: socket.socket, _request: dict[str, Any], _fds: list[int]) -> None:
            self.reply(conn, {"error": why})
            conn.close()

        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # none queued
                return
            self.handle(conn, refuse, timeout_s=2.0)

    def serve(self) -> None:
        while self.children or not self.retiring:
            if not self.children and time.monotonic() - self.last_start > self.idle_s:
                self.retire(f"no start for {self.idle_s:g} s")
                continue
            watched: list[int] = [self.wakeup_read] if self.retiring else [self.listener.fileno(), self.wakeup_read]
            readable, _, _ = select.select(watched, [], [], 1.0)
            if self.wakeup_read in readable:
                with contextlib.suppress(BlockingIOError):
                    os.read(self.wakeup_read, 4096)
            if not self.retiring and self.listener.fileno() in readable:
                conn, _ = self.listener.accept()
                self.handle(conn)
            self.reap()

    def handle(
        self,
        conn: socket.socket,
        answer: Callable[[socket.socket, dict[str, Any], list[int]], None] | None = None,
        timeout_s: float = 10.0,
    ) -> None:
        """Read an entry's request and answer it (`answer`, else `self.answer`); the descriptors
        it sent are closed here once answered. A peer of another user is refused."""
        if task_entry.peer_uid(conn) != os.getuid():
            conn.close()
            return
        conn.settimeout(timeout_s)
        try:
            request, fds = task_entry.read_message(conn, max_fds=3)
        except (OSError, ValueError):
            conn.close()
            return
        try:
            (answer or self.answer)(conn, request, fds)
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def answer(self, conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
        op = request.get("op")
        refused = self.refusal(request) if op == "start" else None
        if refused:
            self.reply(conn, {"error": refused})
            self.retire(refused)
        elif op == "start" and len(fds) == 3:
            self.last_start = time.monotonic()
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                self.become_entry(conn, request, fds)
            self.children[pid] = conn
            self.reply(conn, {"pid": pid}, keep=True)
            replica = "-".join(request.get("args", [])[1:3])
            print(f"template pid {os.getpid()}: {replica} started as pid {pid}", flush=True)
        elif op == "stop":
            self.reply(conn, {"stopping": True})
            self.retire("asked to stop")
        else:
            self.reply(conn, {"error": f"not understood: {op!r}"})

    def refusal(self, request: dict[str, Any]) -> str | None:
        """Why a replica cannot start from this template (it then retires, and the replica's entry
        starts cold and a new one), or None."""
        if request.get("fingerprint") != self.fingerprint:
            return "this host's Python environment changed since its template started"
        host = {k: v for k, v in import_env(request.get("environ") or {}).items() if k not in self.told}
        ours = {k: v for k, v in self.imported_with.items() if k not in self.told}
        differs = sorted({name for name, _ in set(host.items()) ^ set(ours.items())})
        if differs:
            return f"{', '.join(differs)} changed since this host's template started"
        return None

    @staticmethod
    def reply(conn: socket.socket, message: dict[str, Any], keep: bool = False) -> None:
        try:
            task_entry.send_message(conn, message)
        except OSError:
            pass
        if not keep:
            conn.close()

    def become_entry(self, conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
        """In the fork: the entry's process from here, on its standard streams (never returns)."""
        code = 1
        try:
            for held in [conn, self.listener, *self.children.values()]:
                held.close()
            signal.set_wakeup_fd(-1)
            if self.lock is not None:
                self.lock.close()  # a fork that held the lock would keep the next template out
                self.lock = None
            for fd in (self.wakeup_read, self.wakeup_write):
                if fd >= 0:
                    os.close(fd)
            for signum in (signal.SIGCHLD, signal.SIGTERM):
                signal.signal(signum, signal.SIG_DFL)
            os.setsid()
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
                os.close(fd)
            sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 (the process's own stdin)
            os.chdir(request.get("cwd") or "/")
            os.environ.clear()
            os.environ.update(request.get("environ") or {})
            template = os.getppid()
            task_entry.COLD_BECAUSE = lambda env: self.cold_because(env, template)
            replica = task_entry.replica_of(request.get("args") or [], template=template)
            code = replica.run()
        except BaseException:
            traceback.print_exc()
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)

    def cold_because(self, env: Mapping[str, str], template: int) -> str | None:
        """Why the runner cannot be this fork: the variables read at import that differ (the
        template then retires: the next run's first replica starts one with them)."""
        differs = sorted(set(import_env(env).items()) ^ set(self.imported_with.items()))
        if not differs:
            return None
        with contextlib.suppress(OSError):
            os.kill(template, signal.SIGTERM)
        names = ", ".join(sorted({name for name, _ in differs}))
        return f"{names} differ from this host's template's (it retires; the next run starts a new one)"

    def reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is not None:
                self.reply(conn, {"code": os.waitstatus_to_exitcode(status)})


def main(argv: list[str] | None = None) -> int:
    socket_path, preload, idle_s, fingerprint = list(sys.argv[1:] if argv is None else argv)
    told = sys.stdin.read()
    wanted = import_env(json.loads(told)) if told.strip() else {}
    if any(os.environ.get(name) != value for name, value in wanted.items()):
        # what an interpreter reads as it starts (PYTHONUNBUFFERED) must be there when it starts
        env = {**os.environ, **wanted, TOLD_VARIABLE: ",".join(sorted(wanted))}
        os.execve(sys.executable, [sys.executable, "-m", MODULE, *sys.argv[1:]], env)
    told_names = set(filter(None, os.environ.pop(TOLD_VARIABLE, "").split(",")))
    # held for the template's life (the kernel drops it when it exits; a retiring one lets it
    # go); taken already: a live template serves (the replicas of a first run on a host each start one)
    lock = file_lock.acquire(Path(socket_path[: -len(".sock")] + ".lock"), timeout=0)
    if lock is None:
        print(f"template pid {os.getpid()}: another template serves {socket_path}", flush=True)
        return 0
    started = time.monotonic()
    # as it was before the imports: torch._dynamo's sets TORCHINDUCTOR_CACHE_DIR in os.environ,
    # which no entry's environment has
    imported_with = import_env(os.environ)
    try:
        for name in [*preload.split(","), "jupyter_px.runner", "jupyter_px.tracking"]:
            if name:
                importlib.import_module(name)
    except Exception as error:  # the entries start cold, and start no template with this fingerprint again
        failed = {"fingerprint": fingerprint, "error": f"cannot import {name}: {error!r}"}
        task_entry.write_failed(socket_path, failed)
        print(f"template pid {os.getpid()}: {failed['error']}", flush=True)
        return 1
    template = HostTemplate(socket_path, fingerprint, float(idle_s), lock, told_names, imported_with)
    print(f"template pid {os.getpid()} ready on {socket_path} ({time.monotonic() - started:.2f} s)", flush=True)
    template.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
