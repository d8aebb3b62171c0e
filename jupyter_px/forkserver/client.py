"""The starter's side of the template: start an owner through it, ask its status, stop it.

`start(...)` behaves as `jupyter_px.processes.detached.start` does, so a caller can use either: the owner
is running (forked from the standby) but waits for `go()`; leaving the `with` block without
`go()` abandons it (it exits having done nothing); its identity (pid and creation time) is
known before `go()`, to be recorded where others look for it.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from typing import Any

from ..processes import detached
from . import fresh, wire

#: Seconds to wait for the template to hand a start over (it forks a standby if it had none).
START_TIMEOUT_S = 30.0
#: Seconds a template has to take a start (connect, and its "accepted"): one that does not (it
#: was stopped with SIGSTOP, or hangs) is replaced, and the run starts cold at once.
ANSWER_TIMEOUT_S = 2.0


class TemplateUnavailable(OSError):
    """The template cannot be reached, or refused: the caller starts cold instead."""


class TemplateHung(TemplateUnavailable):
    """The template did not take the start within ANSWER_TIMEOUT_S: it is replaced."""


def _connect(socket_path: str, timeout: float) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(socket_path)
    except TimeoutError:
        sock.close()
        raise TemplateHung(f"the template at {socket_path} did not take the connection within {timeout:g} s") from None
    except OSError as error:
        sock.close()
        raise TemplateUnavailable(f"cannot connect to the template at {socket_path}: {error.strerror or error}")
    return sock


def ask(socket_path: str, op: str, timeout: float = 5.0, **fields: Any) -> dict[str, Any]:
    """One request (`status`, `stop`) and its answer."""
    sock = _connect(socket_path, timeout)
    try:
        wire.send(sock, {"op": op, **fields})
        reply, _ = wire.receive(sock)
    except OSError as error:
        raise TemplateUnavailable(f"the template did not answer {op!r}: {error}") from None
    finally:
        sock.close()
    return reply


class StartedOwner:
    """An owner forked by the template, waiting for `go()` (the interface of `detached.Started`)."""

    def __init__(self, sock: socket.socket, identity: detached.ProcessIdentity, zygote_pid: int | None):
        self._sock: socket.socket | None = sock
        self.identity = identity
        self.zygote_pid = zygote_pid

    @property
    def pid(self) -> int:
        return self.identity.pid

    def go(self) -> bool:
        if self._sock is None:
            raise RuntimeError(f"process {self.pid} was already let go or abandoned")
        try:
            self._sock.sendall(detached.GO)
            return True
        except OSError:
            return False
        finally:
            self.abandon()

    def abandon(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> StartedOwner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.abandon()


def start(
    socket_path: str,
    entry: str,
    args: Sequence[str],
    *,
    argv0: str,
    log_path: os.PathLike | str,
    cwd: os.PathLike | str,
    env: Mapping[str, str],
    fingerprint: str,
    reimport: Mapping[str, Sequence[str]] | None = None,
    timeout: float = START_TIMEOUT_S,
) -> StartedOwner:
    """Have the template's standby become `entry(args)` (a `module:function`), run as
    `python -m <argv0's module> ARGS` would be, in `cwd` with exactly `env`, its stdout and
    stderr appended to `log_path`. `reimport` ({"vars": [...], "modules": [prefixes]}): modules
    the standby imported ahead of need that read those variables at import, imported again
    where `env` gives them other values. TemplateUnavailable when that cannot be done
    (TemplateHung: the template did not take it within ANSWER_TIMEOUT_S)."""
    attributes = fresh.process_attributes()  # the owner's niceness, limits and umask: the caller's
    request = {
        "op": "start",
        "entry": entry,
        "args": list(args),
        "argv0": argv0,
        "log": str(log_path),
        "cwd": str(cwd),
        "env": dict(env),
        "umask": attributes["umask"],
        "attributes": attributes,
        "fingerprint": fingerprint,
        "reimport": {key: list(values) for key, values in (reimport or {}).items()},
    }
    sock = _connect(socket_path, min(timeout, ANSWER_TIMEOUT_S))
    try:
        wire.send(sock, request)
        reply, _ = wire.receive(sock)  # "accepted" (or why not), within ANSWER_TIMEOUT_S
    except TimeoutError:
        sock.close()
        raise TemplateHung(f"the template did not answer within {ANSWER_TIMEOUT_S:g} s") from None
    except OSError as error:
        sock.close()
        raise TemplateUnavailable(f"the template did not start the process: {error}") from None
    if reply.get("accepted"):
        sock.settimeout(timeout)
        try:
            reply, _ = wire.receive(sock)  # the owner's pid, from the standby
        except OSError as error:
            sock.close()
            raise TemplateUnavailable(f"the template did not start the process: {error}") from None
    if "pid" not in reply:
        sock.close()
        raise TemplateUnavailable(str(reply.get("error") or f"unexpected answer {reply!r}"))
    pid = int(reply["pid"])
    try:
        identity = detached.ProcessIdentity.of(pid)
    except Exception:
        identity = detached.ProcessIdentity(pid, None)
    sock.settimeout(None)
    return StartedOwner(sock, identity, reply.get("zygote"))
