"""What runs on a host for each replica: `python <run>/ssh/entry.py RUN_DIR ROLE INDEX`, over ssh.

Copied into each run's directory at submit (and with it to a host that does not share the run
store), so it starts by path without importing the backends package (pydantic, the topology
model). Standard library only until the replica starts; then `jupyter_px.runner`, as every
backend's replica runs it. The ssh channel is its whole conversation with the run's follower:

1. It binds a port of its own on the host (`jupyter_px.processes.ports`: kept bound until the
   replica starts, where no other process is given it meanwhile) and says `@px-ssh-ready {"port": P, "pid": PID}`.
2. The follower answers, once every replica is ready, with one line on stdin: the replica's
   environment (the contract, built from every replica's host and port) and the stop grace.
3. It forks the replica in a process group of its own (the runner; stdout and stderr are the
   channel, which the follower writes into the replica's log in the run store).
4. Then stdin carries the follower's requests: `term` (SIGTERM to the group: tracking flushes
   what it accepted), `kill` (SIGKILL). End of file means the follower or its connection is
   gone: SIGTERM, the grace, SIGKILL. Nothing of a run outlives its follower on any host.
5. When the replica has exited, whatever is left of it is killed: its process group, and every
   process of this user whose environment names this run and replica (`PX_RUN_ID`,
   `PX_TASK_TYPE`, `PX_TASK_INDEX`: what a child that started a session of its own still
   carries; read from /proc, Linux's). The last line is `@px-ssh-exit {"code": C, "signal": S}`;
   the entry exits with the replica's code.

**Warm** (`--warm PRELOAD IDLE_S [DIR]` after the three arguments: a PyTorch run, or one without a
framework): before step 1 the entry offers the replica to this host's template
(`host_template.py`, which imported the framework once): it hands over its standard input,
output and error (SCM_RIGHTS) and its arguments, and the template's fork does steps 1-5 on them
(its ready line says `"launch": "warm (template pid N)"`), the runner forked with torch already
imported. The entry stays, passes its signals on, and exits with the code the template reports.
Where no template answers, the replica starts cold, as above, and once the start line has come
it starts the template (detached, its own session) for the next run.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

READY = "@px-ssh-ready "
EXIT = "@px-ssh-exit "
#: Signals passed on to the replica's group (a hang-up of the channel is handled as end of file).
FORWARDED = (signal.SIGTERM, signal.SIGINT)
#: Seconds a host's template has to take a replica (one that does not: the replica starts cold).
TEMPLATE_ANSWER_S = 5.0
#: In a template's fork (set by `host_template`): why the replica's runner cannot be this process
#: (its environment sets a variable read at import to another value than the template had), or
#: None. The runner then starts as a fresh interpreter.
COLD_BECAUSE: Callable[[Mapping[str, str]], str | None] | None = None


def say(prefix: str, data: dict[str, Any]) -> None:
    sys.stdout.write(prefix + json.dumps(data) + "\n")
    sys.stdout.flush()


def die(message: str, code: int = 2) -> None:
    print(f"jupyter-px (ssh replica): {message}", file=sys.stderr, flush=True)
    say(EXIT, {"code": code, "signal": None, "message": message})
    os._exit(code)


class Warm:
    """`--warm PRELOAD IDLE_S [DIR]`: what this host's template for the run's framework imports,
    how long it waits for a start, and where it listens (default /tmp/jupyter-px-warm-<uid>)."""

    def __init__(self, preload: str, idle_s: str, folder: str = ""):
        self.folder = folder or os.path.join(tempfile.gettempdir(), f"jupyter-px-warm-{os.getuid()}")
        self.preload = [name for name in preload.split(",") if name]
        self.idle_s = float(idle_s)
        key = hashlib.sha256(json.dumps([sys.executable, self.preload]).encode()).hexdigest()[:12]
        self.socket_path = os.path.join(self.folder, f"{key}.sock")

    def start_template(self, told_env: Mapping[str, str]) -> None:
        """This host's template, started for the next run (detached: its own session, its output
        in `<key>.log`); told the replica's environment, whose variables read at import it takes.
        Not where one failed to import what it preloads in this same environment (`<key>.failed`)."""
        from jupyter_px.processes.private_folder import private_folder

        unsafe = private_folder(self.folder)
        if unsafe:
            print(f"jupyter-px (ssh replica): no template started: {unsafe}", file=sys.stderr)
            return
        expected = fingerprint(self.preload)
        try:
            with open(failed_path(self.socket_path)) as handle:
                if json.load(handle).get("fingerprint") == expected:
                    return
        except (OSError, ValueError, AttributeError):
            pass
        argv = [sys.executable, "-m", "jupyter_px.backends.ssh.host_template", self.socket_path]
        argv += [",".join(self.preload), str(self.idle_s), expected]
        with open(self.socket_path[: -len(".sock")] + ".log", "ab") as log:
            process = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=log, stderr=log, start_new_session=True, cwd=self.folder
            )
        assert process.stdin is not None
        process.stdin.write(json.dumps(dict(told_env)).encode())
        process.stdin.close()


def failed_path(socket_path: str) -> str:
    return socket_path[: -len(".sock")] + ".failed"


def write_failed(socket_path: str, why: Mapping[str, str]) -> None:
    """What a template that could not start says, for the entries that would start it again."""
    with open(failed_path(socket_path), "w") as handle:
        json.dump(dict(why), handle)


def fingerprint(preload: Sequence[str]) -> str:
    """What a template must share with the entries it serves: the interpreter, what it preloads,
    the folders it imports from (an install changes their mtime; not sys.path[0], the script's
    own) and this package's files."""
    facts: list[Any] = [sys.executable, sys.version, list(preload)]
    facts += [[entry, os.stat(entry).st_mtime_ns] for entry in sys.path[1:] if os.path.isdir(entry)]
    spec = importlib.util.find_spec("jupyter_px")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for top, _dirs, files in os.walk(folder):
            sources = [name for name in files if name.endswith(".py")]
            facts += [[top, name, os.stat(os.path.join(top, name)).st_mtime_ns] for name in sources]
    return hashlib.sha256(json.dumps(facts).encode()).hexdigest()


def send_message(sock: socket.socket, message: Mapping[str, Any], fds: Sequence[int] = ()) -> None:
    """One JSON line; `fds` (SCM_RIGHTS) with its first byte."""
    data = json.dumps(dict(message)).encode() + b"\n"
    if fds:
        socket.send_fds(sock, [data[:1]], list(fds))
        data = data[1:]
    sock.sendall(data)


def read_message(sock: socket.socket, max_fds: int = 0) -> tuple[dict[str, Any], list[int]]:
    """The next JSON line and the descriptors that came with it; ValueError at end of stream."""
    first, fds, _flags, _address = socket.recv_fds(sock, 1, max_fds) if max_fds else (sock.recv(1), [], 0, None)
    data = first
    while data and not data.endswith(b"\n"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    if not data.endswith(b"\n"):
        for fd in fds:
            os.close(fd)
        raise ValueError("the connection closed")
    return json.loads(data), list(fds)


def hand_to_template(warm: Warm, args: Sequence[str]) -> int | str:
    """The replica started by this host's template, as this entry would (its standard input,
    output and error handed over): its exit code once it ended. Text: why no template took it, and
    this entry starts it cold (a template whose environment is no longer this host's retires)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(TEMPLATE_ANSWER_S)
    try:
        sock.connect(warm.socket_path)
    except OSError:
        sock.close()
        return "no template on this host yet (this replica starts one for the next run)"
    if peer_uid(sock) != os.getuid():  # its session's streams and environment go to nobody else
        sock.close()
        return f"the template socket {warm.socket_path} belongs to another user"
    try:
        request = {"op": "start", "args": list(args), "environ": dict(os.environ), "cwd": os.getcwd()}
        send_message(sock, {**request, "fingerprint": fingerprint(warm.preload)}, fds=[0, 1, 2])
        reply, _ = read_message(sock)
    except (OSError, ValueError) as error:
        sock.close()
        return f"this host's template did not answer: {error}"
    if "pid" not in reply:
        sock.close()
        return str(reply.get("error") or reply)
    child = int(reply["pid"])
    for signum in FORWARDED:
        signal.signal(signum, lambda s, _f: _signal(child, s))
    os.close(0)  # the replica's entry reads it now
    sock.settimeout(None)
    try:
        ended, _ = read_message(sock)
    except (OSError, ValueError):  # the template is gone: its fork says its end on the channel
        ended = {}
        try:
            waiter = os.pidfd_open(child)  # readable once the fork has exited
        except ProcessLookupError:
            return 0
        select.select([waiter], [], [])
        os.close(waiter)
    return int(ended.get("code") or 0)


def peer_uid(sock: socket.socket) -> int:
    """The user id of the process at the other end of a Unix socket (Linux's SO_PEERCRED)."""
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    return int(uid)


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except OSError:
        pass


class Replica:
    def __init__(self, run_dir: str, role: str, index: int, warm: Warm | None = None, template: int | None = None):
        self.run_dir, self.role, self.index = run_dir, role, index
        #: where this host's template is (cold: started once the start line has come), and the
        #: pid of the template this entry was forked by (None: started cold)
        self.warm, self.template = warm, template
        #: why a warm replica started cold
        self.cold_because: str | None = None
        self.pid: int | None = None
        self.grace = 30.0
        self.killed_at: float | None = None

    def signal_group(self, signum: int) -> None:
        if self.pid is None:
            return
        try:
            os.killpg(self.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def _stop_later(self) -> None:
        """End of file: the follower is gone. SIGTERM now, SIGKILL after the grace."""
        self.signal_group(signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline:
            if self.pid is None:
                return
            time.sleep(0.1)
        self.signal_group(signal.SIGKILL)

    def listen(self) -> None:
        """The follower's requests on stdin, until end of file."""
        for line in sys.stdin:
            word = line.strip()
            if word == "term":
                self.signal_group(signal.SIGTERM)
            elif word == "kill":
                self.signal_group(signal.SIGKILL)
        self._stop_later()

    def run(self) -> int:
        from jupyter_px.processes.ports import PortReservation  # standard library only

        # held until the replica starts, below the kernel's range and under this user's port lock
        ports = PortReservation(host="")
        (port,) = ports.take(1)
        launch = f"warm (template pid {self.template})" if self.template else "cold"
        if self.cold_because:
            launch = f"cold: {self.cold_because}"
        ready = {"port": port, "sid": os.getsid(0), "host": socket.gethostname()}
        say(READY, {**ready, "launch": launch})
        first = sys.stdin.readline()
        if not first:
            return 0  # the follower went before the start: nothing started
        try:
            told = json.loads(first)
            env = {str(k): str(v) for k, v in told["env"].items()}
            self.grace = float(told.get("grace") or 30.0)
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            die(f"the follower's start line is not understood: {error!r}")
            return 2
        for folder in ("outputs", "tensorboard", "metrics", "params", "logs"):
            os.makedirs(os.path.join(self.run_dir, folder), exist_ok=True)
        if self.warm is not None and self.template is None:
            try:
                self.warm.start_template(env)
            except OSError as error:
                print(f"jupyter-px (ssh replica): cannot start this host's template: {error}", file=sys.stderr)
        import jupyter_px.runner  # noqa: F401  (imported before the fork: the replica starts at once)

        ports.release_socket(port)  # the lock stays until this entry exits
        for signum in FORWARDED:
            signal.signal(signum, lambda s, _f: self.signal_group(s))
        pid = os.fork()
        if pid == 0:
            _become_runner(self.run_dir, env)
        try:
            os.setpgid(pid, pid)  # also here: a stop that comes at once finds the group
        except OSError:
            pass
        self.pid = pid
        threading.Thread(target=self.listen, daemon=True).start()
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
        try:
            os.killpg(pid, signal.SIGKILL)  # what the replica left in its group goes with it
        except (ProcessLookupError, PermissionError):
            pass
        kill_leftovers(env)
        self.pid = None
        name: str | None = None
        if os.WIFSIGNALED(status):
            name, code = signal.Signals(os.WTERMSIG(status)).name, 128 + os.WTERMSIG(status)
        else:
            code = os.waitstatus_to_exitcode(status)
        sys.stderr.flush()
        say(EXIT, {"code": code, "signal": name, **settle(env)})
        return code


def settle(env: dict[str, str]) -> dict[str, Any]:
    """Where the replica wrote the run store itself (a shared filesystem: `PX_METRICS_PATH` set),
    settle its metrics here, on its host, where its pids mean something
    (`jupyter_px.runstore.settle`: the points tracking accepted but never wrote, counted)."""
    if not env.get("PX_METRICS_PATH") or not env.get("PX_HOME"):
        return {}
    try:
        from pathlib import Path

        from jupyter_px.runstore.layout import RunPaths
        from jupyter_px.runstore.settle import settle_replica

        key = f"{env['PX_TASK_TYPE']}-{env['PX_TASK_INDEX']}"
        paths = RunPaths(env["PX_RUN_ID"], Path(env["PX_HOME"]))
        settled = settle_replica(paths, env["PX_TASK_TYPE"], int(env["PX_TASK_INDEX"]))
    except Exception as error:  # the exit record matters more: say it, go on
        print(f"jupyter-px (ssh replica): cannot settle the metrics: {error!r}", file=sys.stderr)
        return {}
    return {"points_lost": settled.lost, "points_dropped": settled.dropped, "notice": settled.notice(key)}


def kill_leftovers(env: dict[str, str]) -> None:
    """SIGKILL every process of this user that carries this replica's identity in its environment
    (`PX_RUN_ID`, `PX_TASK_TYPE`, `PX_TASK_INDEX`), such as a child that left the replica's
    process group with a session of its own."""
    marks = [f"{name}={env.get(name, '')}".encode() for name in ("PX_RUN_ID", "PX_TASK_TYPE", "PX_TASK_INDEX")]
    if not env.get("PX_RUN_ID") or not os.path.isdir("/proc"):
        return
    me, uid = os.getpid(), os.getuid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid != uid:
                continue
            with open(f"/proc/{name}/environ", "rb") as handle:
                entries = set(handle.read().split(b"\0"))
        except OSError:
            continue
        if all(mark in entries for mark in marks):
            try:
                os.kill(int(name), signal.SIGKILL)
            except OSError:
                pass


def _become_runner(run_dir: str, env: dict[str, str]) -> None:
    """In the forked child: a process group of its own, default signals, the replica's
    environment, then the runner (which ends the process itself)."""
    try:
        os.setpgid(0, 0)
        for signum in FORWARDED:
            signal.signal(signum, signal.SIG_DFL)
        os.environ.update(env)
        sys.stdin.close()
        os.close(0)
        os.open(os.devnull, os.O_RDONLY)
        cold = COLD_BECAUSE(os.environ) if COLD_BECAUSE is not None else None
        if cold:
            print(f"jupyter-px (ssh replica): started cold: {cold}", file=sys.stderr, flush=True)
            os.execv(sys.executable, [sys.executable, "-m", "jupyter_px.runner", run_dir])
        sys.argv = ["-m jupyter_px.runner", run_dir]
        from jupyter_px import runner

        runner.main([run_dir])
    finally:
        os._exit(1)


USAGE = "usage: entry.py RUN_DIR ROLE INDEX [--warm PRELOAD IDLE_S [DIR]]"


def replica_of(args: Sequence[str], template: int | None = None) -> Replica:
    """The Replica the arguments name (`die` when they do not)."""
    if len(args) not in (3, 6, 7) or (len(args) > 3 and args[3] != "--warm"):
        die(USAGE)
    try:
        index = int(args[2])
        warm = Warm(*args[4:]) if len(args) > 3 else None
    except ValueError as error:
        die(f"{USAGE}: {error}")
        raise
    return Replica(os.path.abspath(args[0]), args[1], index, warm, template)


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    replica = replica_of(args)
    code = hand_to_template(replica.warm, args) if replica.warm is not None else None
    if not isinstance(code, int):
        replica.cold_because = code
        code = replica.run()
    sys.stdout.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
