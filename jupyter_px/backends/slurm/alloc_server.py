"""A kept allocation's server, one per node: `python <allocation>/server.py FOLDER TASKS_PER_NODE`.

Started once by the allocation's batch script (`allocations.py`: one srun task per node, with all
the job holds on the node, as the node launcher's step), it imports once what the runs' replicas
import (the replica runner, the framework's modules: `allocation.json`'s preload), then serves
the runs claimed on the allocation (`claims/<n>.json`) in order. For each, it forks the node's
launcher (`node.py`'s `Launcher`, as a job of its own runs it), which forks the node's replicas:
a run's replica starts with torch already imported, in milliseconds. The leader (the step's task
0) first writes the run's layout and the nodes' addresses (`entry.prepare`), as a job of its own's
batch script does; `TASKS_PER_NODE` is the job's `SLURM_TASKS_PER_NODE`, which the step's own
environment replaces with the step's.

A run's stop comes as `claims/<n>.signal` (its follower's, `job_control.py`): TERM is passed to the
run's launcher, which passes it to each replica; KILL ends the launcher's whole process group. Once
the run's launcher has ended (or the run was stopped before it started), `claims/<n>.done-<node>`.

The allocation ends when its leader has had no run for `idle_s`: it claims the next number for the
close (the login node's claims race for the same numbers, and one wins), every server sees it and
exits, the batch script ends, and Slurm releases the nodes. A SIGTERM (the time limit, a
`scancel`) is passed to the runs, which end as their followers see.

Standard library only, plus what `entry.py` imports and the preload; copied into the allocation's
folder beside `entry.py` and `node.py`, which it imports (the same folder is first on `sys.path`).
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import socket
import sys
import time

import entry  # the allocation's entry.py (backends/slurm/task_entry.py)
import node  # the allocation's node.py (backends/slurm/node_entry.py)

#: How often a server looks for new runs and for signals to its runs.
POLL_S = 0.02
#: How often a server says it is alive (`nodes/<node>`; the login node's claim checks it).
HEARTBEAT_S = 1.0


class Server:
    def __init__(self, folder: str, env: dict[str, str], tasks_per_node: str):
        self.folder, self.env = folder, env
        #: what the runs' layouts are made from (`entry.layout`): the job's environment
        self.job_env = {**env, "SLURM_TASKS_PER_NODE": tasks_per_node}
        self.claims = os.path.join(folder, "claims")
        self.node = env.get("SLURMD_NODENAME") or socket.gethostname()
        self.leader = env.get("SLURM_PROCID") == "0"
        self.settings = entry.read_json(os.path.join(folder, "allocation.json"))
        self.next = 0  # the next claim to take
        self.children: dict[int, int] = {}  # launcher pid -> claim number
        self.sent: dict[int, str] = {}  # claim number -> the signal last passed on
        self.idle_since = time.monotonic()
        self.closing = False
        self.terminated = False
        self.beat_at = 0.0

    def _on_term(self, signum: int, _frame: object) -> None:
        self.terminated = True
        for pid in list(self.children):
            _kill(pid, signum)

    def serve(self) -> int:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, self._on_term)
        for signum in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGURG):  # for the replicas (stacks, checkpoints)
            signal.signal(signum, signal.SIG_IGN)
        for name in ["jupyter_px.cluster", *self.settings.get("preload", [])]:
            importlib.import_module(name)
        if self.leader:
            entry.write_json(os.path.join(self.folder, "servers.json"), {"count": int(self.env["SLURM_NNODES"])})
        print(f"jupyter-px: node {self.node} serves the allocation's runs ({len(sys.modules)} modules imported)")
        sys.stdout.flush()
        idle_s = float(self.settings.get("idle_s") or 0)
        while True:
            self._reap()
            self._beat()
            if self.terminated or (self.closing and not self.children):
                break
            while not self.closing and not self.terminated and os.path.exists(self._path(self.next, ".json")):
                self._take(self.next)
                self.next += 1
            self._pass_signals()
            idle = not self.children and time.monotonic() - self.idle_since >= idle_s
            if self.leader and idle and not self.closing:
                self._close()
            time.sleep(POLL_S)
        deadline = time.monotonic() + 60  # a TERM: the runs get the time Slurm gives (KillWait) to end
        while self.children and time.monotonic() < deadline:
            self._reap()
            time.sleep(POLL_S)
        return 0

    def _path(self, seq: int, suffix: str) -> str:
        return os.path.join(self.claims, f"{seq}{suffix}")

    def _take(self, seq: int) -> None:
        claim = entry.read_json(self._path(seq, ".json"))
        if claim.get("closed"):
            self.closing = True
            return
        if self._signal(seq):  # stopped before it started
            self._done(seq)
            return
        work = claim["work"]
        if self.leader:
            try:
                entry.prepare(work, self.job_env)
            except Exception as error:  # written to nodes-failed.json: the launchers end with it
                print(f"jupyter-px: run {claim.get('run_id')}: {error!r}", file=sys.stderr, flush=True)
        pid = os.fork()
        if pid == 0:
            self._become_launcher(work, self.job_env)
        self.children[pid] = seq

    def _become_launcher(self, work: str, env: dict[str, str]) -> None:
        code = 1
        try:
            os.setpgid(0, 0)  # its own group: a KILL ends it and the replicas it forks, nothing else
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(signum, signal.SIG_DFL)
            from jupyter_px.forkserver.fresh import refresh_libraries

            refresh_libraries()  # generators reseeded, torch's threads sized, as in a fresh process
            code = node.Launcher(work, env, 0).run()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)

    def _signal(self, seq: int) -> str | None:
        try:
            with open(self._path(seq, ".signal"), encoding="utf-8") as handle:
                return handle.read().strip() or None
        except OSError:
            return None

    def _pass_signals(self) -> None:
        for pid, seq in list(self.children.items()):
            name = self._signal(seq)
            if name is None or self.sent.get(seq) == name:
                continue
            self.sent[seq] = name
            if name == "KILL":
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            else:
                _kill(pid, signal.SIGTERM)

    def _reap(self) -> None:
        while self.children:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.children.clear()
                break
            if pid == 0:
                break
            seq = self.children.pop(pid, None)
            if seq is not None:
                self._done(seq)

    def _done(self, seq: int) -> None:
        entry.write_json(self._path(seq, f".done-{self.node}"), {"at": time.time()})
        self.idle_since = time.monotonic()

    def _beat(self) -> None:
        now = time.monotonic()
        if now - self.beat_at < HEARTBEAT_S:
            return
        self.beat_at = now
        path = os.path.join(self.folder, "nodes", self.node)
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({"pid": os.getpid(), "runs": len(self.children)}, handle)

    def _close(self) -> None:
        """Claim the next number for the close; a run's claim that took it first is served."""
        tmp = os.path.join(self.claims, f".close-{os.getpid()}")
        entry.write_json(tmp, {"closed": True, "at": time.time()})
        try:
            os.link(tmp, self._path(self.next, ".json"))
        except FileExistsError:
            pass  # a run came: taken on the next round
        finally:
            os.unlink(tmp)


def _kill(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def main() -> None:
    if len(sys.argv) != 3:
        entry.die("usage: server.py ALLOCATION_FOLDER TASKS_PER_NODE")
    code = Server(os.path.abspath(sys.argv[1]), dict(os.environ), sys.argv[2]).serve()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
