"""What runs on a host for each replica: `python <run>/ssh/entry.py RUN_DIR ROLE INDEX`, over ssh.

Copied into each run's directory at submit (and with it to a host that does not share the run
store), so it starts by path without importing the backends package (pydantic, the topology
model). Standard library only until the replica starts; then `jupyter_px.runner`, as every
backend's replica runs it. The ssh channel is its whole conversation with the run's follower:

1. It binds a port of its own on the host (port 0, kept bound until the replica starts, so no
   other process is given it meanwhile) and says `@px-ssh-ready {"port": P, "pid": PID}`.
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
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
from typing import Any

READY = "@px-ssh-ready "
EXIT = "@px-ssh-exit "
#: Signals passed on to the replica's group (a hang-up of the channel is handled as end of file).
FORWARDED = (signal.SIGTERM, signal.SIGINT)


def say(prefix: str, data: dict[str, Any]) -> None:
    sys.stdout.write(prefix + json.dumps(data) + "\n")
    sys.stdout.flush()


def die(message: str, code: int = 2) -> None:
    print(f"jupyter-px (ssh replica): {message}", file=sys.stderr, flush=True)
    say(EXIT, {"code": code, "signal": None, "message": message})
    os._exit(code)


class Replica:
    def __init__(self, run_dir: str, role: str, index: int):
        self.run_dir, self.role, self.index = run_dir, role, index
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
        holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        holder.bind(("", 0))
        say(READY, {"port": holder.getsockname()[1], "sid": os.getsid(0), "host": socket.gethostname()})
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
        import jupyter_px.runner  # noqa: F401  (imported before the fork: the replica starts at once)

        holder.close()
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
        sys.argv = ["-m jupyter_px.runner", run_dir]
        from jupyter_px import runner

        runner.main([run_dir])
    finally:
        os._exit(1)


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 3:
        die("usage: entry.py RUN_DIR ROLE INDEX")
    try:
        index = int(args[2])
    except ValueError:
        die(f"index {args[2]!r} is not a number")
        return
    replica = Replica(os.path.abspath(args[0]), args[1], index)
    code = replica.run()
    sys.stdout.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
