"""The servers we started: one record per server in `$PX_HOME/tensorboard/<key>.json`, a lock per
key (two concurrent `start`s for the same set launch once), and when each was last used (the mtime
of `<key>.active`, what its idle timeout counts from).

A record names its process by identity (pid and creation time, `jupyter_px.processes.detached`), so a later
process that got the same pid is never taken for it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from ..processes import file_lock
from ..processes.detached import ProcessIdentity
from ..runstore.files import atomic_write_json
from ..runstore.layout import px_home
from .config import HOST
from .urls import proxy_url


@dataclass(frozen=True)
class ServerInfo:
    """A TensorBoard process we started, as recorded in `$PX_HOME/tensorboard/<key>.json`."""

    key: str
    pid: int
    port: int
    logdirs: dict[str, str]  # TensorBoard run-name prefix -> directory ("" for a single --logdir)
    logdir_spec: str  # the argument given to TensorBoard
    started: float  # time.time() at launch
    create_time: float  # when it started (`ProcessIdentity.started_at`): not a later process with its pid
    idle_timeout: float = 0.0  # seconds without use before it stops itself (0: never)
    owner_pid: int | None = None  # the process it ends with: the Jupyter server, else its starter

    @property
    def identity(self) -> ProcessIdentity:
        return ProcessIdentity(self.pid, self.create_time)

    @property
    def local_url(self) -> str:
        """Reachable from this machine only; browsers should use `url()`."""
        return f"http://{HOST}:{self.port}/"

    def url(self, base_url: str | None = None) -> str:
        """The URL a browser uses: see `proxy_url`."""
        return proxy_url(self.port, base_url)


def servers_dir(home: Path | None) -> Path:
    return (home or px_home()) / "tensorboard"


def record_path(directory: Path, key: str) -> Path:
    return directory / f"{key}.json"


def activity_path(directory: Path, key: str) -> Path:
    return directory / f"{key}.active"


def read_record(path: Path) -> ServerInfo | None:
    try:
        return ServerInfo(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def write_record(directory: Path, info: ServerInfo) -> None:
    atomic_write_json(record_path(directory, info.key), asdict(info))


def alive(info: ServerInfo) -> bool:
    return info.identity.alive()


@contextlib.contextmanager
def locked(directory: Path, key: str) -> Iterator[None]:
    with file_lock.locked(directory / f"{key}.lock"):
        yield


def list_servers(home: Path | None = None) -> list[ServerInfo]:
    """The live servers we started (stale records of dead ones are removed)."""
    directory = servers_dir(home)
    servers = []
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        info = read_record(path)
        if info is not None and alive(info):
            servers.append(info)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    return sorted(servers, key=lambda s: s.started)


def server_for_port(port: int, home: Path | None = None) -> ServerInfo | None:
    """The live server we started on `port`, if any (the proxy serves only those)."""
    return next((info for info in list_servers(home) if info.port == port), None)


def touch(key: str, home: Path | None = None) -> None:
    """Record that server `key` was used now (what its idle timeout counts from)."""
    try:
        activity_path(servers_dir(home), key).touch()
    except FileNotFoundError:  # its directory went away: nothing to keep alive
        pass


def last_active(info: ServerInfo, home: Path | None = None) -> float:
    """When server `info` was last used (or started)."""
    try:
        return max(info.started, activity_path(servers_dir(home), info.key).stat().st_mtime)
    except OSError:
        return info.started
