"""Start, reuse and stop TensorBoard servers: results are data (`Launched`, `Reused`, `Failed`),
shown by `jupyter_px.presentation.tensorboard`.

A server is `python -m jupyter_px.tensorboard.watchdog ...` started with `jupyter_px.processes.detached`
(its own session, so it outlives the kernel that asked for it while the Jupyter server lives):
the watchdog, and under it TensorBoard (`python -m jupyter_px.tensorboard.serve`, TensorBoard's own
main without TensorFlow) of the kernel's environment
(an argument list, never a shell string), reloading every second so that live runs show up quickly. Readiness is an
HTTP answer, not a sleep: `start` polls until the server answers, and returns `Failed` with the
reason and the server's own output if it exits or never answers.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import psutil

from ..processes import detached
from ..runstore.store import read_tail
from . import registry
from .config import HOST, SERVER_PID_ENV, WATCHDOG_MODULE, idle_timeout_setting, tensorflow_setting
from .registry import ServerInfo
from .targets import Target, key, logdirs, planted, spec_arguments


@dataclass(frozen=True)
class Launched:
    """`start` launched a new server."""

    info: ServerInfo


@dataclass(frozen=True)
class Reused:
    """`start` found a live server for the same log directories."""

    info: ServerInfo


@dataclass(frozen=True)
class Failed:
    """`start` could not give a server: why, and what TensorBoard printed (may be empty)."""

    reason: str
    output: str = ""


StartResult = Launched | Reused | Failed


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


# Straight to 127.0.0.1, whatever http_proxy says.
_LOCAL_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def answers(port: int) -> bool:
    """Does a TensorBoard answer on `port` (its `/data/environment`, 200)?"""
    try:
        with _LOCAL_OPENER.open(f"http://{HOST}:{port}/data/environment", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _owner() -> detached.ProcessIdentity | None:
    """What the server ends with: the Jupyter server this kernel belongs to, if it told us
    ($JUPYTER_PX_SERVER_PID), else this process (a kernel run by nbclient or papermill, a script):
    once it is gone, nothing proxies the server and nobody knows its port (see `watchdog`)."""
    text = os.environ.get(SERVER_PID_ENV, "")
    try:
        return detached.ProcessIdentity.of(int(text)) if text.isdigit() else detached.ProcessIdentity.current()
    except psutil.Error:
        return None


def _launch(key: str, dirs: dict[str, str], port: int, directory: Path, timeout: float, idle: float) -> StartResult:
    log_path = directory / f"{key}.log"
    args = spec_arguments(dirs)
    owner = _owner()
    watchdog_args = [
        str(registry.activity_path(directory, key)),
        repr(float(idle)),
        str(owner.pid) if owner else "-",
        repr(owner.started_at) if owner else "-",
        "--",
        *args,
        "--host",
        HOST,
        "--port",
        str(port),
        "--reload_interval",
        "1",
    ]
    started = time.time()
    try:
        child = detached.start(
            WATCHDOG_MODULE, watchdog_args, log_path=log_path, env=detached.importable_environ(), append_log=False
        )
    except OSError as exc:
        return Failed(f"could not run TensorBoard ({WATCHDOG_MODULE}): {exc}")
    child.go()  # known from here on by its Started object; recorded below once it answers (under the lock)
    deadline = started + timeout
    while True:
        code = child.exit_code
        if code is not None:
            output = read_tail(log_path, 8000)
            errors = [ln[len("ERROR: ") :] for ln in output.splitlines() if ln.startswith("ERROR: ")]
            why = f": {errors[-1]}" if errors else ""
            return Failed(f"TensorBoard exited with code {code} before answering on {HOST}:{port}{why}", output)
        if answers(port):
            registry.touch(key, directory.parent)  # the idle time counts from here (see watchdog.why_stop)
            break
        if time.time() > deadline:
            detached.terminate(child.identity, 5.0)
            return Failed(
                f"TensorBoard did not answer on {HOST}:{port} within {timeout:g} s", read_tail(log_path, 8000)
            )
        time.sleep(0.25)
    info = ServerInfo(
        key=key,
        pid=child.pid,
        port=port,
        logdirs=dirs,
        logdir_spec=" ".join(args[1:]),
        started=started,
        create_time=child.identity.started_at or 0.0,
        idle_timeout=float(idle),
        owner_pid=owner.pid if owner else None,
    )
    registry.write_record(directory, info)
    return Launched(info)


def start(
    target: Target,
    *,
    port: int | None = None,
    timeout: float = 120.0,
    home: Path | None = None,
    idle_timeout: float | None = None,
) -> StartResult:
    """Serve the TensorBoard logs of one or several runs, reusing a live server for the same set.

    `target`: a run id, a list of run ids, a {name: directory} mapping, a directory, or a
    TensorBoard logdir spec "name:dir,name:dir". `port`: the port for a newly launched server
    (default: a free one). Blocks until the server answers (seconds: TensorBoard imports a lot),
    so call it from a worker thread inside an event loop. Never raises for what goes wrong at
    run time; returns Failed(reason, output) instead. `idle_timeout`: seconds without use before
    a newly launched server stops itself (default: `idle_timeout_setting()`; 0: never).
    """
    try:
        dirs = logdirs(target, home)
    except ValueError as exc:
        return Failed(str(exc))
    links = planted(dirs)
    if links:
        return Failed(f"{'; '.join(links[:3])}: not served (TensorBoard reads through links; remove them)")
    if port is not None and not (isinstance(port, int) and 0 < port < 65536):
        return Failed(f"port must be an integer between 1 and 65535, got {port!r}")
    try:
        idle = idle_timeout_setting() if idle_timeout is None else float(idle_timeout)
        tensorflow_setting()  # read again by the server it starts: a bad value is said here, not in its log
    except ValueError as exc:
        return Failed(str(exc))
    if idle < 0:
        return Failed(f"idle_timeout must be 0 (never) or a positive number of seconds, got {idle_timeout!r}")
    server_key = key(dirs)
    directory = registry.servers_dir(home)
    with registry.locked(directory, server_key):
        existing = registry.read_record(registry.record_path(directory, server_key))
        if existing is not None and registry.alive(existing):
            registry.touch(server_key, home)
            return Reused(existing)
        result = _launch(server_key, dirs, port or _free_port(), directory, timeout, idle)
        if port is None and isinstance(result, Failed) and "already in use" in result.output:
            result = _launch(server_key, dirs, _free_port(), directory, timeout, idle)  # lost a race for the port
        return result


def stop(key: str | ServerInfo | Launched | Reused, *, timeout: float = 5.0, home: Path | None = None) -> bool:
    """Stop a server we started; True if one was running. Accepts a key, an info or a result."""
    if isinstance(key, (Launched, Reused)):
        key = key.info
    if isinstance(key, ServerInfo):
        key = key.key
    if not isinstance(key, str) or not key.isalnum():
        raise ValueError(f"not a TensorBoard server key: {key!r}")
    directory = registry.servers_dir(home)
    record = registry.record_path(directory, key)
    with registry.locked(directory, key):
        info = registry.read_record(record)
        running = info is not None and detached.terminate(info.identity, timeout)  # TensorBoard and its data server
        for path in (record, directory / f"{key}.log", registry.activity_path(directory, key)):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    return running
