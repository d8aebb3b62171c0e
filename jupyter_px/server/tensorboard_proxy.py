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
* **Use is recorded** (`tensorboard.touch`, at most every `WATCH_INTERVAL_S` per server): what
  the idle timeout of an unused TensorBoard counts from.

Built on jupyter-server-proxy's `LocalProxyHandler` (websockets, headers, streaming are its job).
"""

from __future__ import annotations

import re
import time
from typing import Any

from jupyter_server_proxy.handlers import LocalProxyHandler
from tornado import web

from .. import tensorboard

#: The route's pattern under the base URL: port, then the path inside TensorBoard.
ROUTE = tensorboard.PROXY_ROUTE + r"(\d+)(/.*|)"
#: Absolute asset paths TensorBoard writes into its pages.
_ABSOLUTE_ASSETS = re.compile(rb"(?<=[(\"'])/(font-roboto/)")
_REWRITTEN_TYPES = ("text/html", "text/css")
#: When each server's use was last recorded (pid, port) -> time.monotonic().
_recorded: dict[tuple[int, int], float] = {}


def rewrite_asset_urls(body: bytes, prefix: str) -> bytes:
    """`url(/font-roboto/x.woff2)` -> `url(<prefix>font-roboto/x.woff2)` (prefix ends with '/')."""
    return _ABSOLUTE_ASSETS.sub(lambda match: prefix.encode() + match.group(1), body)


class TensorBoardProxyHandler(LocalProxyHandler):
    """Proxies one of our TensorBoards; 404 for a port where none of ours serves."""

    def _check(self, port: str) -> None:
        info = tensorboard.server_for_port(int(port))
        if info is None:
            raise web.HTTPError(404, f"no TensorBoard of jupyter-px on port {port} (jupyter px tensorboard list)")
        now = time.monotonic()
        if now - _recorded.get((info.pid, info.port), -1e9) >= tensorboard.WATCH_INTERVAL_S:
            _recorded[(info.pid, info.port)] = now
            tensorboard.touch(info.key)

    def _prefix(self, port: str) -> str:
        return f"{self.base_url.rstrip('/')}/{tensorboard.PROXY_ROUTE}{int(port)}/"

    async def http_get(self, port: str, proxied_path: str) -> Any:
        if not proxied_path:  # TensorBoard's page loads its parts relative to a trailing slash
            return self.redirect(self._prefix(port) + (f"?{self.request.query}" if self.request.query else ""))
        return await self.proxy(port, proxied_path)

    async def open(self, port: str, proxied_path: str) -> Any:
        self._check(port)
        return await self.proxy_open(tensorboard.HOST, port, proxied_path)

    def proxy(self, port: str, proxied_path: str) -> Any:
        self._check(port)
        prefix = self._prefix(port)

        def rewrite(response: Any) -> None:
            kind = (response.headers.get("Content-Type") or "").split(";")[0].strip()
            if kind in _REWRITTEN_TYPES and response.body:
                response.body = rewrite_asset_urls(response.body, prefix)

        self.rewrite_response = [rewrite]
        return super(LocalProxyHandler, self).proxy(tensorboard.HOST, port, proxied_path)


def handlers(base_url: str) -> list[tuple[str, type, dict[str, Any]]]:
    """The route to add to the Jupyter server's web app."""
    from jupyter_server.utils import url_path_join

    return [(url_path_join(base_url, ROUTE), TensorBoardProxyHandler, {"absolute_url": False})]
