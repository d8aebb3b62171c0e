"""`<base_url>px/tensorboard/<port>/...`: our TensorBoards, through the Jupyter server.

Why a route of our own rather than jupyter-server-proxy's generic `<base_url>proxy/<port>/`:

* **Every asset under the proxied path.** TensorBoard's `index.html` (and its
  `font-roboto/roboto.html`) load fonts with absolute URLs, `url(/font-roboto/...)`, so under
  any prefix the browser asks the server root for them (404s in the console of every embed).
  `--path_prefix` does not change those literal URLs. This handler rewrites them in HTML and
  CSS responses to the route's own prefix; everything else TensorBoard loads is relative.
* **Only what we started.** It proxies a port only while a TensorBoard recorded by
  `jupyter_px.tensorboard` serves there (not any local port), behind the server's
  authentication (`JupyterHandler`), so it also works behind JupyterHub.
* **Authorized like every px route.** Each request, websocket upgrades included, asks the
  deployment's Authorizer for `read` on the `px` resource (`AUTH_ACTION`) before anything is
  proxied: a policy that denies `px` denies its TensorBoards' data too.
* **Use is recorded** (`tensorboard.touch`, at most every `WATCH_INTERVAL_S` per server): what
  the idle timeout of an unused TensorBoard counts from.
* **Starting is not failing.** A recorded TensorBoard that does not accept connections yet
  (it is starting, or busy loading on a loaded machine) is a 503 with `Retry-After`, which a
  client retries, never the proxy's 500.
* **No file work on the event loop, little of it at all.** A TensorBoard page makes dozens of
  requests a second; the port -> server lookup (`TensorBoardPorts`) re-reads the records only
  when their directory changed (a start writes a record, a stop or an idle end removes files,
  both change the directory's mtime) or the index is `MAX_AGE_S` old, in a worker thread; a
  stopped or unknown port is a prompt 404.

Built on jupyter-server-proxy's `LocalProxyHandler` (websockets, headers, streaming are its job).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_server_proxy.handlers import LocalProxyHandler
from tornado import web

from .. import tensorboard
from ..tensorboard.targets import planted

#: The route's pattern under the base URL: port, then the path inside TensorBoard.
ROUTE = tensorboard.PROXY_ROUTE + r"(\d+)(/.*|)"
#: Absolute asset paths TensorBoard writes into its pages.
_ABSOLUTE_ASSETS = re.compile(rb"(?<=[(\"'])/(font-roboto/)")
_REWRITTEN_TYPES = ("text/html", "text/css")
#: The Authorizer's resource and action for looking at a TensorBoard (the REST routes' resource;
#: starting one is `execute` there, reading what it serves is `read`).
AUTH_RESOURCE = "px"
AUTH_ACTION = "read"
#: Seconds a client is asked to wait (`Retry-After`) while a recorded TensorBoard does not answer yet.
RETRY_AFTER_S = 1
#: The servers directory inside a run store's home (`tensorboard.ServerInfo` records live there).
SERVERS_DIR = "tensorboard"


def rewrite_asset_urls(body: bytes, prefix: str) -> bytes:
    """`url(/font-roboto/x.woff2)` -> `url(<prefix>font-roboto/x.woff2)` (prefix ends with '/')."""
    return _ABSOLUTE_ASSETS.sub(lambda match: prefix.encode() + match.group(1), body)


class TensorBoardPorts:
    """port -> `ServerInfo` of the live TensorBoards recorded under some homes, kept between
    requests and rebuilt only when a servers directory changed or the index is `max_age` old.

    Thread-safe: lookups run in worker threads (`lookup`), several at once."""

    #: A TensorBoard killed from outside (no file changes) drops out of the index after this long.
    MAX_AGE_S = 5.0

    def __init__(self, homes: Iterable[Path], max_age: float = MAX_AGE_S):
        self.homes = list(dict.fromkeys(Path(home) for home in homes))
        self.max_age = max_age
        self._lock = threading.Lock()
        self._stamps: tuple[int | None, ...] | None = None
        self._built = 0.0
        self._ports: dict[int, tuple[tensorboard.ServerInfo, Path]] = {}  # port -> (server, its home)
        self._recorded: dict[tuple[int, int], float] = {}  # (pid, port) -> when its use was recorded
        self._links: dict[int, tuple[float, list[str]]] = {}  # port -> (when checked, links found)

    def _stamp(self) -> tuple[int | None, ...]:
        stamps: list[int | None] = []
        for home in self.homes:
            try:
                stamps.append(os.stat(home / SERVERS_DIR).st_mtime_ns)
            except OSError:
                stamps.append(None)
        return tuple(stamps)

    def _index(self) -> dict[int, tuple[tensorboard.ServerInfo, Path]]:
        before = self._stamp()
        if before == self._stamps and time.monotonic() - self._built < self.max_age:
            return self._ports
        self._ports = {info.port: (info, home) for home in self.homes for info in tensorboard.list_servers(home)}
        self._built = time.monotonic()
        # Unchanged while read: trust the index until the next change. Changed (list_servers
        # removed a dead server's record, or a server started meanwhile): read again next time.
        self._stamps = before if self._stamp() == before else None
        return self._ports

    def find(self, port: int) -> tensorboard.ServerInfo | None:
        """The live TensorBoard of ours on `port` (recording its use), or None. Blocking."""
        with self._lock:
            found = self._index().get(port)
            if found is None:
                return None
            info, home = found
            now = time.monotonic()
            if now - self._recorded.get((info.pid, info.port), -1e9) >= tensorboard.WATCH_INTERVAL_S:
                self._recorded[(info.pid, info.port)] = now
                tensorboard.touch(info.key, home)
            return info

    async def lookup(self, port: int) -> tensorboard.ServerInfo | None:
        return await asyncio.to_thread(self.find, port)

    #: How long a check of a server's run directories for planted links is trusted (a page load
    #: makes dozens of requests; a link planted later is refused from the next check on).
    LINKS_CHECKED_FOR_S = 1.0

    def planted(self, info: tensorboard.ServerInfo) -> list[str]:
        """The links planted in the runs this server serves (`targets.planted`). Blocking."""
        checked_at, found = self._links.get(info.port, (-1e9, []))
        if time.monotonic() - checked_at >= self.LINKS_CHECKED_FOR_S:
            found = planted(info.logdirs)
            self._links[info.port] = (time.monotonic(), found)
        return found


class TensorBoardProxyHandler(LocalProxyHandler):
    """Proxies one of our TensorBoards; 404 for a port where none of ours serves."""

    auth_resource = AUTH_RESOURCE

    def initialize(self, ports: TensorBoardPorts, **kwargs: Any) -> None:
        super().initialize(**kwargs)
        self.ports = ports

    async def prepare(self, *args: Any, **kwargs: Any) -> None:
        """Authentication (the proxy's own `prepare`), then the Authorizer, for every method:
        `prepare` runs before any of them, a websocket's upgrade included."""
        await super().prepare(*args, **kwargs)
        user = self.current_user
        if user and not await ensure_async(self.authorizer.is_authorized(self, user, AUTH_ACTION, AUTH_RESOURCE)):
            raise web.HTTPError(403, f"User is not authorized to {AUTH_ACTION} on resource: {AUTH_RESOURCE}.")

    async def _check(self, port: str) -> None:
        info = await self.ports.lookup(int(port))
        if info is None:
            raise web.HTTPError(404, f"no TensorBoard of jupyter-px on port {port} (jupyter px tensorboard list)")
        links = await asyncio.to_thread(self.ports.planted, info)
        if links:  # TensorBoard reads through links: nothing of it is served while one is there
            raise web.HTTPError(409, f"{'; '.join(links[:3])}: TensorBoard on port {port} is not served")

    def _prefix(self, port: str) -> str:
        return f"{self.base_url.rstrip('/')}/{tensorboard.PROXY_ROUTE}{int(port)}/"

    async def http_get(self, port: str, proxied_path: str) -> Any:
        if not proxied_path:  # TensorBoard's page loads its parts relative to a trailing slash
            return self.redirect(self._prefix(port) + (f"?{self.request.query}" if self.request.query else ""))
        return await self.proxy(port, proxied_path)

    async def open(self, port: str, proxied_path: str) -> Any:
        await self._check(port)
        return await self.proxy_open(tensorboard.HOST, port, proxied_path)

    async def proxy(self, port: str, proxied_path: str) -> Any:
        await self._check(port)
        prefix = self._prefix(port)

        def rewrite(response: Any) -> None:
            kind = (response.headers.get("Content-Type") or "").split(";")[0].strip()
            if kind in _REWRITTEN_TYPES and response.body:
                response.body = rewrite_asset_urls(response.body, prefix)

        self.rewrite_response = [rewrite]
        try:
            return await super(LocalProxyHandler, self).proxy(tensorboard.HOST, port, proxied_path)
        except (ConnectionError, web.HTTPError) as error:  # refused: raised, or as jupyter-server-proxy's 500
            if getattr(error, "status_code", 500) != 500 or await _accepts(tensorboard.HOST, int(port)):
                raise
        # written here, not raised: an HTTPError's error page clears the headers, Retry-After too
        self.set_status(503)
        self.set_header("Retry-After", str(RETRY_AFTER_S))
        self.set_header("Content-Type", "application/json")
        starting = f"TensorBoard on port {port} is starting: it does not accept connections yet"
        self.finish(json.dumps({"message": starting}))
        return None


async def _accepts(host: str, port: int) -> bool:
    """Whether something accepts a TCP connection on host:port now."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout=2)
    except (OSError, TimeoutError):
        return False
    writer.close()
    return True
