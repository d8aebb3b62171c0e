"""Start, reuse and stop TensorBoard servers for runs, and embed them in a notebook.

    result = tensorboard.start("my-run")           # or ["run-a", "run-b"], or {"name": "/a/dir"}
    result.info.url()                               # where a browser reaches it (unless Failed)
    tensorboard.embed(result)                       # an iframe through the Jupyter server

Why it is built this way (ideas from TensorBoard's own `manager.py` / `notebook.py`):

* One process per distinct set of log directories, recorded in `$PX_HOME/tensorboard/<key>.json`
  and reused while that process lives, so re-running a cell, another kernel, the monitor's button and
  the API all land on the same server instead of starting one each. A file lock makes two
  concurrent `start`s for the same set launch once.
* The server is started detached (its own session) so it outlives the kernel that asked for
  it; `stop(key)` ends it. It binds 127.0.0.1 only; browsers reach it through the Jupyter
  server's authenticated route `<base_url>px/tensorboard/<port>/` (our server extension, built on
  jupyter-server-proxy: it serves only TensorBoards recorded here, and rewrites the font URLs
  TensorBoard writes as absolute paths, so every asset resolves under that route), which also
  works behind JupyterHub, where `localhost:<port>` means the user's laptop.
* It is `[sys.executable, "-m", "tensorboard.main", ...]` (an argument list, never a shell
  string), so it is the TensorBoard of the kernel's environment, reloading every second so
  that live runs show up quickly.
* Readiness is an HTTP answer, not a sleep: `start` polls until the server answers, and
  returns `Failed` with the reason and the server's own output if it exits or never answers.
* **Nobody reachable, nothing left running.** A detached server would otherwise outlive
  everything (its kernel, the Jupyter server that proxied it). So TensorBoard runs under a small
  watchdog thread in its own process (`_serve`), which ends the process group (TensorBoard and its
  data server) when
  - the Jupyter server that proxies it has exited (its pid and start time come from the server
    extension, `JUPYTER_PX_SERVER_PID`, inherited by the kernels it starts), or
  - nobody used it for `idle_timeout` seconds: default `DEFAULT_IDLE_TIMEOUT_S` (one hour),
    set by `$JUPYTER_PX_TENSORBOARD_IDLE_TIMEOUT` (seconds, 0 = never) or `start(idle_timeout=)`.
    Use is what the proxy route (`jupyter_px.server.tensorboard_proxy`) and `start()` record
    with `touch()`: the mtime of `$PX_HOME/tensorboard/<key>.active`.
  `jupyter px tensorboard list|stop` shows and stops them by hand.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .runstore.layout import RUN_ID_PATTERN, RunPaths, px_home
from .runstore.store import read_tail

__all__ = [
    "DEFAULT_IDLE_TIMEOUT_S",
    "IDLE_TIMEOUT_ENV",
    "SERVER_PID_ENV",
    "ServerInfo",
    "Launched",
    "Reused",
    "Failed",
    "StartResult",
    "start",
    "list_servers",
    "last_active",
    "touch",
    "stop",
    "BASE_URL_ENV",
    "PROXY_URL_ENV",
    "jupyter_base_url",
    "proxy_url",
    "embed",
]

#: The Jupyter server's base URL, put in the server's environment (so its kernels') by the server
#: extension (`jupyter_px.server`), which imports this name from here.
BASE_URL_ENV = "JUPYTER_PX_BASE_URL"
#: Where TensorBoard's notebook integration looks for a proxy URL template ("%PORT%" replaced).
PROXY_URL_ENV = "TENSORBOARD_PROXY_URL"
HOST = "127.0.0.1"
#: The Jupyter server route (under its base URL) that serves our TensorBoards.
PROXY_ROUTE = "px/tensorboard/"
#: The pid of the Jupyter server whose kernels start TensorBoards (set by `jupyter_px.server`):
#: a TensorBoard it proxies ends when that server has gone.
SERVER_PID_ENV = "JUPYTER_PX_SERVER_PID"
#: Seconds without use after which a TensorBoard stops itself (0: never).
IDLE_TIMEOUT_ENV = "JUPYTER_PX_TENSORBOARD_IDLE_TIMEOUT"
DEFAULT_IDLE_TIMEOUT_S = 3600.0
#: How often the watchdog looks (and how often the proxy records use, at most).
WATCH_INTERVAL_S = 2.0


@dataclass(frozen=True)
class ServerInfo:
    """A TensorBoard process we started, as recorded in `$PX_HOME/tensorboard/<key>.json`."""

    key: str
    pid: int
    port: int
    logdirs: dict[str, str]  # TensorBoard run-name prefix -> directory ("" for a single --logdir)
    logdir_spec: str  # the argument given to TensorBoard
    started: float  # time.time() at launch
    create_time: float  # the process's creation time, to tell it from a later process with the same pid
    idle_timeout: float = 0.0  # seconds without use before it stops itself (0: never)
    owner_pid: int | None = None  # the Jupyter server it ends with (None: no server)

    @property
    def local_url(self) -> str:
        """Reachable from this machine only; browsers should use `url()`."""
        return f"http://{HOST}:{self.port}/"

    def url(self, base_url: str | None = None) -> str:
        """The URL a browser uses: see `proxy_url`."""
        return proxy_url(self.port, base_url)


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
Target = str | Sequence[str] | Mapping[str, str | os.PathLike]


# ---------------------------------------------------------------------------------------------
# What to serve.


class _BadTarget(ValueError):
    pass


def _logdirs(target: Target, home: Path | None) -> dict[str, str]:
    """Normalise `start`'s argument to {run name: absolute directory}.

    - a run id ("my-run")               -> {"": <run>/tensorboard}  (TensorBoard runs: worker-0, ...)
    - several run ids (["a", "b"])      -> {"a": <a>/tensorboard, "b": <b>/tensorboard}
    - a mapping {name: directory}       -> as given
    - any other string: an existing directory, or a logdir spec "name:dir,name:dir"

    A run's tensorboard directory need not exist yet (TensorBoard picks it up when it appears);
    a directory given by path must.
    """
    if isinstance(target, str) and RUN_ID_PATTERN.match(target):
        target = [target]
    if isinstance(target, Mapping):
        spec = {str(k): str(v) for k, v in target.items()}
    elif isinstance(target, str):
        spec = {}
        for part in target.split(","):
            name, _, path = part.rpartition(":")
            spec[name] = path
    else:
        ids = list(target)
        if not ids:
            raise _BadTarget("no runs given")
        if len(ids) == 1:
            return {"": str(_run_tensorboard_dir(ids[0], home))}
        return {run_id: str(_run_tensorboard_dir(run_id, home)) for run_id in ids}
    out = {}
    for name, path in spec.items():
        if not path:
            raise _BadTarget(f"empty log directory for {name!r} in {target!r}")
        if "," in path or ":" in name or "," in name:
            raise _BadTarget(f"{name!r}: {path!r} cannot be passed to TensorBoard (',' or ':' in it)")
        path = os.path.abspath(os.path.expanduser(path))
        if not os.path.isdir(path):
            raise _BadTarget(f"log directory {path!r} does not exist")
        out[name] = path
    if len(out) > 1 and "" in out:
        raise _BadTarget(f"every log directory needs a name when there are several: {target!r}")
    return out


def _run_tensorboard_dir(run_id: str, home: Path | None) -> Path:
    paths = RunPaths(run_id, home)  # raises InvalidRunId (a ValueError) for a bad id
    if not paths.root.is_dir():
        raise _BadTarget(f"run {run_id!r} not found in {paths.root.parent}")
    return paths.tensorboard_dir


def _spec_argument(logdirs: Mapping[str, str]) -> list[str]:
    if list(logdirs) == [""]:
        return ["--logdir", logdirs[""]]
    return ["--logdir_spec", ",".join(f"{name}:{path}" for name, path in sorted(logdirs.items()))]


def _key(logdirs: Mapping[str, str]) -> str:
    canonical = json.dumps(sorted(logdirs.items()), separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


# ---------------------------------------------------------------------------------------------
# Records.


def _servers_dir(home: Path | None) -> Path:
    return (home or px_home()) / "tensorboard"


def _read_record(path: Path) -> ServerInfo | None:
    try:
        return ServerInfo(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _alive(info: ServerInfo) -> bool:
    import psutil

    try:
        proc = psutil.Process(info.pid)
        return abs(proc.create_time() - info.create_time) < 1.0 and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@contextlib.contextmanager
def _locked(directory: Path, key: str) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def list_servers(home: Path | None = None) -> list[ServerInfo]:
    """The live servers we started (stale records of dead ones are removed)."""
    directory = _servers_dir(home)
    servers = []
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        info = _read_record(path)
        if info is not None and _alive(info):
            servers.append(info)
        else:
            if info is not None:
                _reap(info.pid)
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    return sorted(servers, key=lambda s: s.started)


# ---------------------------------------------------------------------------------------------
# Starting and stopping.


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


# Straight to 127.0.0.1, whatever http_proxy says.
_LOCAL_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _answers(port: int) -> bool:
    try:
        with _LOCAL_OPENER.open(f"http://{HOST}:{port}/data/environment", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _kill(pid: int, timeout: float) -> None:
    """SIGTERM the server's process group (it leads one: started with start_new_session), then SIGKILL."""
    import psutil

    try:
        target = os.getpgid(pid) if os.getpgid(pid) == pid else None
    except ProcessLookupError:
        return
    send = (lambda sig: os.killpg(target, sig)) if target is not None else (lambda sig: os.kill(pid, sig))
    with contextlib.suppress(ProcessLookupError):
        send(signal.SIGTERM)
    try:
        psutil.Process(pid).wait(timeout)
    except psutil.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            send(signal.SIGKILL)
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).wait(timeout)
    except psutil.Error:
        pass


# Popen objects of servers launched by this process, so that their exit status is collected.
_children: dict[int, subprocess.Popen[bytes]] = {}


def _reap(pid: int) -> None:
    child = _children.pop(pid, None)
    if child is not None:
        child.poll()


def _owner() -> tuple[int, float] | None:
    """(pid, create time) of the Jupyter server this kernel belongs to, if it told us."""
    import psutil

    text = os.environ.get(SERVER_PID_ENV, "")
    if not text.isdigit():
        return None
    try:
        return int(text), psutil.Process(int(text)).create_time()
    except psutil.Error:
        return None


def idle_timeout_setting() -> float:
    """`$JUPYTER_PX_TENSORBOARD_IDLE_TIMEOUT` in seconds (0: never), else `DEFAULT_IDLE_TIMEOUT_S`."""
    text = os.environ.get(IDLE_TIMEOUT_ENV)
    if text is None or not text.strip():
        return DEFAULT_IDLE_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{IDLE_TIMEOUT_ENV}: {text!r} is not a number of seconds") from None
    if value < 0:
        raise ValueError(f"{IDLE_TIMEOUT_ENV}: {text!r} is negative (0 means never)")
    return value


#: What the TensorBoard process runs: the watchdog, then TensorBoard's own main. A constant
#: (the arguments travel in argv), never text built from input.
_SERVE = "import sys; from jupyter_px.tensorboard import _serve; _serve(sys.argv[1:])"


def _launch(
    key: str, logdirs: dict[str, str], port: int, directory: Path, timeout: float, idle_timeout: float
) -> StartResult:
    log_path = directory / f"{key}.log"
    args = _spec_argument(logdirs)
    owner = _owner()
    command = [
        sys.executable,
        "-c",
        _SERVE,
        str(directory / f"{key}.active"),
        repr(float(idle_timeout)),
        str(owner[0]) if owner else "-",
        repr(owner[1]) if owner else "-",
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
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
            )
    except OSError as exc:
        return Failed(f"could not run {command[0]} (TensorBoard): {exc}")
    _children[proc.pid] = proc
    deadline = started + timeout
    while True:
        code = proc.poll()
        if code is not None:
            output = read_tail(log_path, 8000)
            errors = [ln[len("ERROR: ") :] for ln in output.splitlines() if ln.startswith("ERROR: ")]
            why = f": {errors[-1]}" if errors else ""
            return Failed(f"TensorBoard exited with code {code} before answering on {HOST}:{port}{why}", output)
        if _answers(port):
            touch(key, directory.parent)  # the idle time counts from here (see _why_stop)
            break
        if time.time() > deadline:
            _kill(proc.pid, 5.0)
            proc.poll()
            return Failed(
                f"TensorBoard did not answer on {HOST}:{port} within {timeout:g} s", read_tail(log_path, 8000)
            )
        time.sleep(0.25)
    import psutil

    info = ServerInfo(
        key=key,
        pid=proc.pid,
        port=port,
        logdirs=logdirs,
        logdir_spec=" ".join(args[1:]),
        started=started,
        create_time=psutil.Process(proc.pid).create_time(),
        idle_timeout=float(idle_timeout),
        owner_pid=owner[0] if owner else None,
    )
    from .runstore.store import atomic_write_json

    atomic_write_json(directory / f"{key}.json", asdict(info))
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
        logdirs = _logdirs(target, home)
    except ValueError as exc:
        return Failed(str(exc))
    if port is not None and not (isinstance(port, int) and 0 < port < 65536):
        return Failed(f"port must be an integer between 1 and 65535, got {port!r}")
    try:
        idle = idle_timeout_setting() if idle_timeout is None else float(idle_timeout)
    except ValueError as exc:
        return Failed(str(exc))
    if idle < 0:
        return Failed(f"idle_timeout must be 0 (never) or a positive number of seconds, got {idle_timeout!r}")
    key = _key(logdirs)
    directory = _servers_dir(home)
    with _locked(directory, key):
        existing = _read_record(directory / f"{key}.json")
        if existing is not None and _alive(existing):
            touch(key, home)
            return Reused(existing)
        result = _launch(key, logdirs, port or _free_port(), directory, timeout, idle)
        if port is None and isinstance(result, Failed) and "already in use" in result.output:
            result = _launch(key, logdirs, _free_port(), directory, timeout, idle)  # lost a race for the port
        return result


def stop(key: str | ServerInfo | Launched | Reused, *, timeout: float = 5.0, home: Path | None = None) -> bool:
    """Stop a server we started; True if one was running. Accepts a key, an info or a result."""
    if isinstance(key, (Launched, Reused)):
        key = key.info
    if isinstance(key, ServerInfo):
        key = key.key
    if not isinstance(key, str) or not key.isalnum():
        raise ValueError(f"not a TensorBoard server key: {key!r}")
    directory = _servers_dir(home)
    record = directory / f"{key}.json"
    with _locked(directory, key):
        info = _read_record(record)
        running = info is not None and _alive(info)
        if running:
            _kill(info.pid, timeout)  # type: ignore[union-attr]
        if info is not None:
            _reap(info.pid)
        for path in (record, directory / f"{key}.log", directory / f"{key}.active"):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    return running


def touch(key: str, home: Path | None = None) -> None:
    """Record that server `key` was used now (what its idle timeout counts from)."""
    path = _servers_dir(home) / f"{key}.active"
    try:
        path.touch()
    except FileNotFoundError:  # its directory went away: nothing to keep alive
        pass


def last_active(info: ServerInfo, home: Path | None = None) -> float:
    """When server `info` was last used (or started)."""
    try:
        return max(info.started, (_servers_dir(home) / f"{info.key}.active").stat().st_mtime)
    except OSError:
        return info.started


def server_for_port(port: int, home: Path | None = None) -> ServerInfo | None:
    """The live server we started on `port`, if any (the proxy serves only those)."""
    return next((info for info in list_servers(home) if info.port == port), None)


def _owner_alive(pid: int, create_time: float) -> bool:
    import psutil

    try:
        proc = psutil.Process(pid)
        return abs(proc.create_time() - create_time) < 1.0 and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _why_stop(activity: Path, started: float, idle_timeout: float, owner: tuple[int, float] | None) -> str | None:
    """Why the watchdog ends its TensorBoard now, or None to keep serving."""
    if owner is not None and not _owner_alive(*owner):
        return f"the Jupyter server (pid {owner[0]}) that proxies this TensorBoard has exited"
    if idle_timeout > 0:
        try:
            used = activity.stat().st_mtime
        except OSError:
            used = 0.0
        # Only once start() has seen it answer (it touches the file then): a slow start is not idleness.
        if used >= started - 1.0 and time.time() - used > idle_timeout:
            return f"not used for {idle_timeout:g} s ({IDLE_TIMEOUT_ENV})"
    return None


def _watch(activity: Path, idle_timeout: float, owner: tuple[int, float] | None) -> None:
    started = time.time()
    while True:
        time.sleep(min(WATCH_INTERVAL_S, idle_timeout) if idle_timeout > 0 else WATCH_INTERVAL_S)
        why = _why_stop(activity, started, idle_timeout, owner)
        if why is not None:
            print(f"jupyter-px: stopping TensorBoard: {why}", file=sys.stderr, flush=True)
            with contextlib.suppress(OSError):
                activity.unlink()
            os.killpg(os.getpgid(0), signal.SIGTERM)  # TensorBoard and its data server
            time.sleep(5)
            os.killpg(os.getpgid(0), signal.SIGKILL)


def _serve(argv: list[str]) -> None:
    """The TensorBoard process: `ACTIVITY IDLE_TIMEOUT OWNER_PID OWNER_CREATED -- <tensorboard args>`.

    A daemon thread watches the owner and the idle time; TensorBoard's own `main` runs in this
    thread, as `python -m tensorboard.main` would run it."""
    import threading

    activity, idle, owner_pid, owner_created, separator, *tensorboard_args = argv
    if separator != "--":
        raise SystemExit(f"jupyter_px.tensorboard._serve: bad arguments {argv!r}")
    owner = (int(owner_pid), float(owner_created)) if owner_pid != "-" else None
    threading.Thread(target=_watch, args=(Path(activity), float(idle), owner), daemon=True).start()
    from tensorboard.main import run_main

    sys.argv = ["tensorboard", *tensorboard_args]
    run_main()


# ---------------------------------------------------------------------------------------------
# URLs and embedding.


def jupyter_base_url(base_url: str | None = None) -> str:
    """The Jupyter server's base URL: the argument, else the one `jupyter_px.server` put in the
    server's environment for its kernels, else $JUPYTERHUB_SERVICE_PREFIX, else "/".

    Always starts and ends with "/".
    """
    url = base_url or os.environ.get(BASE_URL_ENV) or os.environ.get("JUPYTERHUB_SERVICE_PREFIX") or "/"
    return "/" + url.strip("/") + "/" if url.strip("/") else "/"


def proxy_url(port: int, base_url: str | None = None) -> str:
    """Where a browser reaches the server on `port`.

    An explicit `base_url` gives `<base_url>px/tensorboard/<port>/`. Otherwise
    $TENSORBOARD_PROXY_URL, if set, is used the way TensorBoard's notebook integration uses it (its
    "%PORT%" replaced); otherwise `<jupyter_base_url()>px/tensorboard/<port>/`.
    """
    template = os.environ.get(PROXY_URL_ENV)
    if base_url is None and template:
        return template.replace("%PORT%", str(int(port)))
    return f"{jupyter_base_url(base_url)}{PROXY_ROUTE}{int(port)}/"


def embed(result: StartResult, height: int = 800, base_url: str | None = None, label: str = "") -> Any:
    """What a notebook shows for a start result: TensorBoard in an iframe through the Jupyter
    server (HTML; `TensorBoard: <url>` as text), or the reason it could not start."""
    from .presentation.html import TextAndHtml, tensorboard_html
    from .presentation.text import tensorboard_text

    return TextAndHtml(
        tensorboard_text(result, base_url), tensorboard_html(result, label=label, height=height, base_url=base_url)
    )
