"""A spawn-ahead pool: interpreters started ahead of need that have imported a framework a fork
cannot carry (TensorFlow), each handed to one replica of the next run.

A template for such a framework imports only the runner (nothing of the framework: forking it
is safe). Its standby owner, before it imports the supervisor's modules, spawns the pool
(`spawn`): one `pool_member` per replica the last run of this template had (`hint`), each exec'd
fresh with the environment that replica had when it imported (the variables read at import:
OpenBLAS's and OpenMP's thread counts, TensorFlow's log level and oneDNN switch...), in its own
process group, a child of the standby, so that once the standby becomes the run's supervisor
every member is its own child: it reaps it, its parent-death signal is armed against it, it is
its subreaper. The standby hands them to itself-as-owner through `POOL_ENV` (`describe`); the
owner's side is `Pool`: `take` sends a member the replica's start (the request a zygote gets),
`release` kills those no replica took. A member serves one replica only; the next run's pool is
the next standby's.

Standard library only: this runs in the template's standby.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import wire
from .fresh import RESET_BEFORE_EXEC

#: The environment variable that hands the pool's members to the owner (JSON).
POOL_ENV = "JUPYTER_PX_POOL"
MEMBER_MODULE = "jupyter_px.forkserver.pool_member"
#: At most this many members, whatever the last run had (each holds an interpreter with the framework).
MAX_MEMBERS = 16

#: Variables an interpreter or a framework reads while it starts and imports, so a member must
#: have had the replica's values before its import (measured with a getenv tracer over `import
#: tensorflow, tf_keras`, TensorFlow 2.21: numpy's OpenBLAS sizes its thread pool from
#: OPENBLAS_NUM_THREADS / GOTO_NUM_THREADS / OMP_NUM_THREADS when it loads, libgomp reads OMP_*
#: and GOMP_*, TensorFlow's C++ reads TF_CPP_MIN_LOG_LEVEL, TF_CPP_MAX_VLOG_LEVEL, TF_CPP_VMODULE,
#: TF_ENABLE_ONEDNN_OPTS, TF_ENABLED_DEVICE_TYPES, TF_USE_MODULAR_FILESYSTEM, GRPC_*, its Python
#: TF_USE_LEGACY_KERAS and KERAS_*, h5py HDF5_*). What the replica reads later (TF_CONFIG, when
#: the strategy's cluster resolver is built; TF_NUM_INTRAOP_THREADS, when the eager context is)
#: takes effect from the environment it is given, as in a cold process.
READ_AT_IMPORT = (
    "PYTHON", "LD_", "OMP_", "MKL_", "KMP_", "GOMP_", "OPENBLAS", "GOTO_", "NPY_", "NUMPY_",
    "TF_", "KERAS_", "HDF5_", "GRPC_", "TORCH", "PYTORCH", "CUBLAS",
)  # fmt: skip
#: Of those, the run's own, read later: never part of what a member must have imported with.
READ_LATER = ("TF_CONFIG", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")


def reads_at_import(name: str) -> bool:
    return name.startswith(READ_AT_IMPORT) and name not in READ_LATER


def import_env(env: Mapping[str, str]) -> dict[str, str]:
    """The part of an environment a member must have had when it imported."""
    return {k: v for k, v in env.items() if reads_at_import(k)}


def read_hint(path: str) -> dict[str, Any]:
    """The pool's hint file (`{"members": [env at import, ...], "imports": [...]}`), or nothing yet."""
    try:
        with open(path) as handle:
            hint = json.load(handle) if path else {}
    except (OSError, ValueError):
        return {}
    return hint if isinstance(hint, dict) else {}


@dataclass
class Member:
    """One interpreter of the pool: its pid (and process group), the environment it imported
    with (the variables read at import only), the owner's end of its socket."""

    pid: int
    env: dict[str, str]
    sock: socket.socket | None = field(default=None, repr=False)


def spawn(hint: Mapping[str, Any], imports: Sequence[str], base_env: Mapping[str, str], log_path: str) -> list[Member]:
    """Start the pool the hint describes (`{"members": [env read at import, ...]}`): each member's
    environment is `base_env` with the variables read at import (`reads_at_import`) replaced by
    that member's. Members that cannot be started are left out."""
    members = []
    for wanted in list(hint.get("members") or [])[:MAX_MEMBERS]:
        env = {k: v for k, v in base_env.items() if not reads_at_import(k)}
        env.update({str(k): str(v) for k, v in wanted.items()})
        try:
            members.append(_spawn_one(env, imports, log_path, dict(wanted)))
        except OSError:
            continue
    return members


def _spawn_one(env: dict[str, str], imports: Sequence[str], log_path: str, wanted: dict[str, str]) -> Member:
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        os.set_inheritable(theirs.fileno(), True)
        argv = [sys.executable, "-m", MEMBER_MODULE, str(theirs.fileno()), str(os.getpid()), ",".join(imports)]
        pid = os.posix_spawn(
            sys.executable,
            argv,
            env,
            file_actions=[(os.POSIX_SPAWN_DUP2, fd, to) for fd, to in ((devnull, 0), (log_fd, 1), (log_fd, 2))],
            setpgroup=0,  # its own process group from the start: a signal to the group reaches all of it
            setsigdef=RESET_BEFORE_EXEC,
            setsigmask=set(),
        )
    except OSError:
        mine.close()
        raise
    finally:
        theirs.close()
        os.close(log_fd)
        os.close(devnull)
    os.set_inheritable(mine.fileno(), False)
    return Member(pid, wanted, mine)


class PoolPlan:
    """The template's side: what its next standby's pool is made of (the hint file a run leaves,
    read again when a run says it changed it), and the standby's part: spawning it when told."""

    def __init__(self, preload: Sequence[str], framework: Sequence[str], hint_path: str, log_path: str):
        self.preload, self.framework = list(preload), list(framework)
        self.hint_path, self.log_path = hint_path, log_path
        self.hint: dict[str, Any] = {}

    @classmethod
    def of(cls, args: argparse.Namespace) -> PoolPlan | None:
        """The template's pool, from its command line (`add_arguments`); None without one."""
        framework = [name for name in args.pool_imports.split(",") if name]
        return cls(args.preload, framework, args.pool_hint, args.pool_log) if framework else None

    def refresh(self) -> bool:
        """Read the hint again; whether it changed."""
        hint = read_hint(self.hint_path)
        changed, self.hint = hint != self.hint, hint
        return changed

    def imports(self) -> list[str]:
        """What each member imports: the template's own preload, the framework, and the optional
        modules the last run's code imported (`hint["imports"]`)."""
        extra = [name for name in self.hint.get("imports") or [] if name not in self.framework]
        return [*self.preload, *self.framework, *extra]

    def describe(self, spawned: bool) -> dict[str, Any]:
        return {**self.hint, "imports": self.imports(), "spawned": spawned}

    def standby_side(self) -> tuple[dict[str, str], set[int], Callable[[], None]]:
        """In the standby: what it hands its owner-to-be (`POOL_ENV`), the descriptors to keep
        open, both filled by the returned `spawn()`, called when the template says so."""
        members: list[Member] = []
        handover, keep = {POOL_ENV: "[]"}, set()

        def spawn_now() -> None:
            members.extend(spawn(self.hint, self.imports(), dict(os.environ), self.log_path))
            handover[POOL_ENV] = describe(members)
            keep.update(fds(members))

        return handover, keep, spawn_now


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The template's options for a pool (`PoolPlan.of`)."""
    parser.add_argument("--pool-imports", default="", help="a spawn-ahead pool's framework modules (no zygote then)")
    parser.add_argument("--pool-hint", default="", help="the JSON file saying what the next pool is made of")
    parser.add_argument("--pool-log", default=os.devnull, help="where the pool's interpreters write until they serve")


def describe(members: Sequence[Member]) -> str:
    """What `POOL_ENV` carries to the owner: each member's pid, socket descriptor and environment."""
    return json.dumps([{"pid": m.pid, "fd": m.sock.fileno(), "env": m.env} for m in members if m.sock is not None])


def fds(members: Sequence[Member]) -> set[int]:
    return {m.sock.fileno() for m in members if m.sock is not None}


class Pool:
    """The owner's side: the members it was handed, each taken once."""

    def __init__(self, members: list[Member]):
        self.members = members

    @classmethod
    def from_environ(cls) -> Pool | None:
        """The pool this process was handed by its template (the variable is removed, so nothing
        it starts inherits it); None when it was started any other way."""
        text = os.environ.pop(POOL_ENV, "")
        if not text:
            return None
        members = []
        for entry in json.loads(text):
            sock = socket.socket(fileno=int(entry["fd"]))
            os.set_inheritable(sock.fileno(), False)
            members.append(Member(int(entry["pid"]), dict(entry.get("env") or {}), sock))
        return cls(members)

    @property
    def size(self) -> int:
        return len(self.members)

    def take(self, wanted_env: Mapping[str, str], request: dict[str, Any]) -> Member | None:
        """Hand `request` (`Zygote.request(...)`) to a member that imported with `wanted_env`
        (the replica's variables read at import); that member, or None when none matches or
        none is alive. A member that does not take the request is killed and passed over."""
        for member in list(self.members):
            if member.env != dict(wanted_env) or member.sock is None:
                continue
            self.members.remove(member)
            try:
                wire.send(member.sock, request)
            except OSError:
                _kill(member)
                continue
            member.sock.close()
            member.sock = None
            return member
        return None

    def differences(self, wanted_env: Mapping[str, str]) -> list[str]:
        """Names whose value at import differs between `wanted_env` and the closest member's."""
        best: list[str] | None = None
        for member in self.members:
            names = sorted(k for k in set(member.env) | set(wanted_env) if member.env.get(k) != wanted_env.get(k))
            if best is None or len(names) < len(best):
                best = names
        return best or []

    def release(self) -> list[int]:
        """Kill the members nobody took (SIGKILL to each one's group); their pids, to be reaped."""
        pids = []
        for member in self.members:
            _kill(member)
            pids.append(member.pid)
        self.members = []
        return pids


def _kill(member: Member) -> None:
    if member.sock is not None:
        member.sock.close()
        member.sock = None
    try:
        os.killpg(member.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
