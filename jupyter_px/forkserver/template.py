"""`python -m jupyter_px.forkserver.template STATE SOCKET ...`: the template process.

Started by `jupyter_px.processes.detached` (its own session, behind a go-pipe) by whoever first needs it;
see `jupyter_px.backends.local.warm` for when and why. It:

1. records the signal dispositions of a fresh interpreter, then imports the preload list (the
   framework, the replica runner, tracking) without running anything of the framework: no
   thread pool is started, CUDA is never initialised (checked: a template that finds CUDA
   initialised refuses to serve);
2. listens on a Unix socket (mode 0600 in a 0700 directory; a peer of another user is
   refused), writes `ready` into its state file (JSON) and freezes its heap (`gc.freeze`);
3. keeps one **standby owner** ready: a fork that forked its zygote first (`zygote`; TensorFlow's:
   a spawn-ahead `pool`, once no run it started still goes), imported the supervisor's modules,
   and waits; a `start` is handed to it with the caller's connection (SCM_RIGHTS), a new forked;
4. answers `status` and `stop`; a `start` whose environment fingerprint is not its own is
   refused and the template stops (the caller starts a new one);
5. exits when nobody started anything for IDLE seconds, when its owner (the Jupyter server)
   exits, on SIGTERM or on `stop`, writing why into its state file. Owners it started go on:
   each is its own session's leader and no longer tied to it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import logging
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..processes import detached
from . import fresh, pool, wire, zygote

log = logging.getLogger("jupyter_px.forkserver")
LOGGERS = ("jupyter_px.forkserver",)

#: How long a connected peer has to send its request.
REQUEST_TIMEOUT_S = 10.0


def write_state(path: Path, **fields: Any) -> None:
    """Merge `fields` into the JSON state file, atomically."""
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        state = {}
    state.update(fields)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(state, indent=1))
    os.replace(tmp, path)


class Standby:
    """The owner-to-be: its pid, its zygote's pid, the template's end of its control socket."""

    def __init__(self, pid: int, ctl: socket.socket):
        self.pid = pid
        self.ctl = ctl
        self.zygote_pid: int | None = None
        self.pool_asked = False  # its spawn-ahead pool asked for (`spawn_pool`)


class Template:
    def __init__(self, args: argparse.Namespace, dispositions: dict[int, Any], library_fds: set[int]):
        self.args = args
        self.state = Path(args.state)
        self.dispositions = dispositions
        self.library_fds = library_fds
        self.listener: socket.socket | None = None
        self.standby: Standby | None = None
        self.owners: set[int] = set()
        self.last_used = time.time()
        self.stop_reason: str | None = None
        self.wake_r, self.wake_w = os.pipe()
        self.owner_fd: int | None = None
        #: What the next standby's spawn-ahead pool is made of, when this template has one.
        self.pool = pool.PoolPlan.of(args)

    # ---- start-up --------------------------------------------------------------------------
    def listen(self) -> None:
        path = Path(self.args.socket)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.parent.stat()
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise PermissionError(f"{path.parent} must belong to this user and be private (mode 0700)")
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            listener.bind(str(path))
        finally:
            os.umask(old)
        listener.listen(64)
        self.listener = listener

    def watch_owner(self) -> None:
        """Exit with the Jupyter server that owns us: a pidfd becomes readable when it exits."""
        pid = self.args.owner_pid
        if not pid:
            return
        owner = detached.ProcessIdentity(pid, self.args.owner_started)
        if not owner.alive():
            self.stop_reason = f"its owner, the Jupyter server (pid {pid}), had exited"
            return
        try:
            self.owner_fd = os.pidfd_open(pid)
        except (OSError, AttributeError):
            self.owner_fd = None  # polled in the loop instead

    def install_signals(self) -> None:
        os.set_blocking(self.wake_w, False)
        os.set_blocking(self.wake_r, False)
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGTERM, self._on_sigterm)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    def _on_sigterm(self, signum: int, frame: object) -> None:
        self.stop_reason = self.stop_reason or "stopped (SIGTERM)"

    # ---- the standby owner ------------------------------------------------------------------
    def fork_standby(self) -> None:
        if self.pool is not None:
            self.pool.refresh()
            write_state(self.state, pool=self.pool.describe(spawned=False))
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        template = os.getpid()
        pid = os.fork()
        if pid == 0:
            try:
                mine.close()
                self._standby_main(theirs, template)
            finally:
                os._exit(1)
        theirs.close()
        self.standby = Standby(pid, mine)
        log.info("standby owner pid %d forked", pid)

    def _standby_main(self, ctl: socket.socket, template: int) -> None:
        assert self.listener is not None
        self.listener.close()
        if self.standby is not None:
            self.standby.ctl.close()
        os.close(self.wake_r)
        os.close(self.wake_w)
        if self.owner_fd is not None:
            os.close(self.owner_fd)
        fresh.restore_signals(self.dispositions)
        fresh.prctl(fresh.PR_SET_PDEATHSIG, signal.SIGKILL)  # while on standby, it ends with the template
        if os.getppid() != template:
            os._exit(0)
        os.setsid()  # the owner's session, which its zygote and replicas share (as a detached start's)
        if self.pool is not None:  # a framework a fork cannot carry: interpreters spawned ahead instead
            handover, keep, spawn = self.pool.standby_side()
            self._await_start(ctl, None, handover, keep, spawn)
        owner_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        standby = os.getpid()
        zygote_pid = os.fork()
        if zygote_pid == 0:
            ctl.close()
            owner_end.close()
            fresh.prctl(fresh.PR_SET_PDEATHSIG, signal.SIGKILL)  # it ends with its owner
            if os.getppid() != standby:
                os._exit(0)
            zygote.serve(zygote_end, self.dispositions, self.library_fds, LOGGERS)
        zygote_end.close()
        handover = {zygote.ZYGOTE_FD_ENV: f"{zygote_pid}:{owner_end.fileno()}"}
        self._await_start(ctl, zygote_pid, handover, {owner_end.fileno()})

    def _await_start(
        self,
        ctl: socket.socket,
        zygote_pid: int | None,
        handover: dict[str, str],
        keep: set[int],
        spawn: Callable[[], None] | None = None,
    ) -> None:
        """The standby, ready: import the owner's modules ahead of need, wait for a start (and,
        with a pool, for the template's word to spawn it: `spawn_pool`)."""
        for name in self.args.standby_import:  # the owner's own modules, imported ahead of need
            try:
                importlib.import_module(name)
            except Exception as error:
                log.warning("standby: cannot import %s ahead of time: %r", name, error)
        while True:
            try:
                request, fds = wire.receive(ctl)
            except OSError:
                os._exit(0)  # the template went away
            if request.get("op") != "spawn" or spawn is None:
                break
            spawn()
            spawn = None
        if len(fds) != 1:
            os._exit(1)
        ctl.close()
        self._become_owner(request, fds[0], zygote_pid, handover, keep)

    def _become_owner(
        self, request: dict[str, Any], conn_fd: int, zygote_pid: int | None, handover: dict[str, str], keep: set[int]
    ) -> None:
        """The standby takes the start: its own session, the caller's environment, directory,
        log and argv; it tells the caller its pid; the entry point then waits for "go" on the
        same connection (`detached.await_go`), as a detached start's does on its go-pipe."""
        fresh.prctl(fresh.PR_SET_PDEATHSIG, 0)  # an owner outlives the template
        os.set_blocking(conn_fd, True)  # the template read the request with a timeout (non-blocking)
        conn = socket.socket(fileno=conn_fd)
        try:
            wire.send(conn, {"pid": os.getpid(), "zygote": zygote_pid})
        except OSError:
            os._exit(0)  # the caller gave up: the start is abandoned
        conn.detach()  # the fd is the go-pipe from here on (closed by await_go)
        os.umask(int(request.get("umask", 0o022)))
        fresh.redirect_stdio(request.get("log"))
        fresh.close_fds({conn_fd, *keep, *self.library_fds})
        fresh.take_on(request.get("attributes") or {})  # the caller's niceness and limits (after close_fds)
        for fd in (conn_fd, *keep):
            os.set_inheritable(fd, False)
        fresh.forget_logging(LOGGERS)
        env = dict(request["env"])
        stale = _modules_read_at_import(request, env)
        env[detached.GO_FD_ENV] = str(conn_fd)
        env.update(handover)
        fresh.replace_environment(env, request["cwd"], request.get("argv0") or "-", list(request.get("args") or []))
        fresh.refresh_libraries()
        for name in stale:  # imported ahead of need with other values of variables they read: again
            del sys.modules[name]
        fresh.call_entry(request["entry"], list(request.get("args") or []))

    def spawn_pool(self) -> None:
        """Have the standby spawn its pool once no run this template started is still going: the
        pool's imports (seconds of every core) must not slow the run that just started."""
        standby = self.standby
        if standby is None or standby.pool_asked or self.owners or self.pool is None:
            return
        standby.pool_asked = True
        with contextlib.suppress(OSError):  # it is gone: reaped, and another forked
            wire.send(standby.ctl, {"op": "spawn"})

    # ---- requests ----------------------------------------------------------------------------
    def handle(self, conn: socket.socket) -> None:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
        uid = int.from_bytes(creds[4:8], sys.byteorder)
        if uid != os.getuid():
            log.warning("refused a connection from uid %d", uid)
            conn.close()
            return
        conn.settimeout(REQUEST_TIMEOUT_S)
        try:
            request, _ = wire.receive(conn)
        except OSError as error:
            log.info("a request that never came: %s", error)
            conn.close()
            return
        op = request.get("op")
        if op == "start":
            self._start(conn, request)
        elif op == "status":
            self._reply(conn, self.describe())
        elif op == "hint":
            self._reply(conn, {"replaced": self._take_hint()})
        elif op == "stop":
            self.stop_reason = str(request.get("reason") or "stopped on request")
            self._reply(conn, {"stopping": True})
        else:
            self._reply(conn, {"error": f"unknown request {op!r}"})

    def _reply(self, conn: socket.socket, message: dict[str, Any]) -> None:
        try:
            wire.send(conn, message)
        except OSError:
            pass
        conn.close()

    def _take_hint(self) -> bool:
        """A run said what its replicas imported with: a standby made for another hint is replaced
        (the loop forks the next; its pool ends with it, by the members' parent-death signal)."""
        if self.pool is None or not self.pool.refresh() or self.standby is None:
            return False
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.standby.pid, signal.SIGKILL)
        self.standby.ctl.close()
        self.standby = None
        return True

    def describe(self) -> dict[str, Any]:
        standby = self.standby
        return {
            "pid": os.getpid(),
            "standby_pid": standby.pid if standby else None,
            "owners": sorted(self.owners),
            "last_used": self.last_used,
            "idle_s": self.args.idle,
            "fingerprint": self.args.fingerprint,
            "preloaded": len(sys.modules),
            "pool": self.pool.describe(bool(standby and standby.pool_asked)) if self.pool else None,
        }

    def _start(self, conn: socket.socket, request: dict[str, Any]) -> None:
        if request.get("fingerprint") != self.args.fingerprint:
            self._reply(conn, {"error": "the environment changed since this template started (fingerprint)"})
            self.stop_reason = "the environment's fingerprint changed"
            return
        try:
            wire.send(conn, {"accepted": True})  # the caller bounds its wait for this (client.py)
        except OSError:
            conn.close()
            return
        if self.standby is None:
            self.fork_standby()
        standby = self.standby
        assert standby is not None
        try:
            wire.send(standby.ctl, request, fds=[conn.fileno()])
        except OSError as error:
            self._reply(conn, {"error": f"the standby owner (pid {standby.pid}) is gone: {error}"})
            self.standby = None
            return
        conn.close()
        standby.ctl.close()
        self.owners.add(standby.pid)
        log.info("start handed to owner pid %d: %s", standby.pid, request.get("args"))
        self.standby = None
        self.last_used = time.time()
        write_state(self.state, last_used=self.last_used)
        self.fork_standby()

    # ---- the loop ----------------------------------------------------------------------------
    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.owners.discard(pid)
            if self.standby is not None and pid == self.standby.pid:
                log.warning("standby owner %d exited (status %d); forking another", pid, status)
                self.standby.ctl.close()
                self.standby = None

    def serve(self) -> int:
        assert self.listener is not None
        self.fork_standby()
        while self.stop_reason is None:
            idle_left = self.args.idle - (time.time() - self.last_used) if self.args.idle > 0 else 60.0
            if idle_left <= 0:
                self.stop_reason = f"not used for {self.args.idle:g} s (JUPYTER_PX_WARM_IDLE_S)"
                break
            watched: list[Any] = [self.listener, self.wake_r]
            if self.owner_fd is not None:
                watched.append(self.owner_fd)
            timeout = min(idle_left, 2.0 if self.args.owner_pid and self.owner_fd is None else 60.0)
            readable, _, _ = select.select(watched, [], [], timeout)
            if self.wake_r in readable:
                try:
                    while os.read(self.wake_r, 512):
                        pass
                except BlockingIOError:
                    pass
            self.reap()
            if self._owner_exited(readable):
                self.stop_reason = f"its owner, the Jupyter server (pid {self.args.owner_pid}), exited"
            if self.listener in readable and self.stop_reason is None:
                try:
                    conn, _ = self.listener.accept()
                except OSError:
                    continue
                self.handle(conn)
            if self.standby is None and self.stop_reason is None:
                self.fork_standby()
            self.spawn_pool()
        return self.shutdown()

    def _owner_exited(self, readable: list[Any]) -> bool:
        if self.owner_fd is not None:
            return self.owner_fd in readable
        if not self.args.owner_pid:
            return False
        return not detached.ProcessIdentity(self.args.owner_pid, self.args.owner_started).alive()

    def shutdown(self) -> int:
        log.info("stopping: %s", self.stop_reason)
        try:
            Path(self.args.socket).unlink()
        except OSError:
            pass
        if self.standby is not None:
            try:
                os.kill(self.standby.pid, signal.SIGKILL)  # its zygote follows (parent-death signal)
            except ProcessLookupError:
                pass
        write_state(self.state, state="stopped", stopped_at=time.time(), stop_reason=self.stop_reason)
        self.reap()
        return 0


def _modules_read_at_import(request: dict[str, Any], env: dict[str, str]) -> list[str]:
    """Modules the standby imported ahead of need that read a variable at import whose value the
    caller's environment changes (`request["reimport"]`: {"vars": [...], "modules": [prefix]}):
    they are imported again by the entry point, with the caller's values."""
    reimport = request.get("reimport") or {}
    names = reimport.get("vars") or []
    if all(os.environ.get(name) == env.get(name) for name in names):
        return []
    prefixes = tuple(reimport.get("modules") or [])
    return [name for name in sys.modules if prefixes and name.startswith(prefixes)]


def _preload(names: list[str]) -> None:
    for name in names:
        importlib.import_module(name)


def _cuda_initialised() -> bool:
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_initialized())
    except Exception:
        return False


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m jupyter_px.forkserver.template")
    parser.add_argument("state", help="the state file (JSON) this template keeps up to date")
    parser.add_argument("socket", help="the Unix socket to listen on")
    parser.add_argument("--fingerprint", required=True)
    parser.add_argument("--idle", type=float, default=600.0, help="seconds unused before it stops (0: never)")
    parser.add_argument("--owner-pid", type=int, default=0, help="the Jupyter server it ends with")
    parser.add_argument("--owner-started", type=float, default=None)
    parser.add_argument("--preload", default="", help="modules to import up front, comma-separated")
    parser.add_argument("--standby-import", default="", help="modules the standby owner imports ahead of need")
    pool.add_arguments(parser)
    args = parser.parse_args(argv)
    args.preload = [name for name in args.preload.split(",") if name]
    args.standby_import = [name for name in args.standby_import.split(",") if name]
    return args


def main(argv: list[str] | None = None) -> int:
    dispositions = fresh.initial_dispositions()  # before anything installs a handler
    args = parse(argv)
    if not detached.await_go():
        return 0
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%Y-%m-%d %H:%M:%S"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    state = Path(args.state)
    started = time.monotonic()
    try:
        _preload(args.preload)
    except BaseException as error:
        reason = f"importing the preload ({', '.join(args.preload)}) failed: {error!r}"
        log.error("%s", reason)
        write_state(state, state="failed", error=reason, stopped_at=time.time())
        return 1
    if _cuda_initialised():  # a forked child could not use CUDA; never serve from such a template
        reason = "CUDA was initialised while importing the preload; a forked replica could not use it"
        write_state(state, state="failed", error=reason, stopped_at=time.time())
        return 1
    library_fds = fresh.open_fds() - {0, 1, 2}
    template = Template(args, dispositions, library_fds)
    template.watch_owner()
    try:
        template.listen()
    except OSError as error:
        reason = f"cannot listen on {args.socket}: {error}"
        write_state(state, state="failed", error=reason, stopped_at=time.time())
        return 1
    template.install_signals()
    fresh.freeze_heap()
    write_state(
        state,
        state="ready",
        ready_at=time.time(),
        preload_s=round(time.monotonic() - started, 3),
        preloaded=sorted(sys.modules),
        library_fds=sorted(library_fds),
    )
    log.info("template pid %d ready (%d modules, %.2f s)", os.getpid(), len(sys.modules), time.monotonic() - started)
    return template.serve()


if __name__ == "__main__":
    sys.exit(main())
