"""Start, reuse and stop TensorBoard servers for runs.

    result = tensorboard.start("my-run")           # or ["run-a", "run-b"], or {"name": "/a/dir"}
    result.info.url()                               # where a browser reaches it (unless Failed)
    presentation.tensorboard.embed(result)          # an iframe through the Jupyter server

Why it is built this way (ideas from TensorBoard's own `manager.py` / `notebook.py`: the manager
returns typed results, the notebook module renders them and imports the manager, never the reverse):

* One process per distinct set of log directories (`targets.py`), recorded in
  `$PX_HOME/tensorboard/<key>.json` and reused while that process lives (`registry.py`), so
  re-running a cell, another kernel, the monitor's button and the API all land on the same server.
  A file lock makes two concurrent `start`s for the same set launch once.
* The server is started detached (`launch.py`, with `jupyter_px.processes.detached`) so it outlives the
  kernel that asked for it; `stop(key)` ends it. It binds 127.0.0.1 only; browsers reach it
  through the Jupyter server's authenticated route `<base_url>px/tensorboard/<port>/` (`urls.py`;
  our server extension, built on jupyter-server-proxy, serves only TensorBoards recorded here).
* Nobody reachable, nothing left running: TensorBoard runs under a watchdog (`watchdog.py`, a
  `python -m` entry point, TensorBoard's parent) that ends it when the Jupyter server proxying
  it exits (with no server: the process that started it), or after `idle_timeout` seconds
  without use (`$JUPYTER_PX_TENSORBOARD_IDLE_TIMEOUT`, default one hour), and waits for every
  process it holds (a child subreaper), so none is left a zombie.
  `jupyter px tensorboard list|stop` shows and stops them by hand.

Display (HTML, text) is `jupyter_px.presentation.tensorboard`, a layer above this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_attributes
from .config import (
    DEFAULT_IDLE_TIMEOUT_S,
    HOST,
    IDLE_TIMEOUT_ENV,
    SERVER_PID_ENV,
    TENSORFLOW_ENV,
    WATCH_INTERVAL_S,
    idle_timeout_setting,
)

#: Imported on first use (PEP 562): `jupyter px` builds its parser from this package's settings
#: (`config.py`) on every command, and the launcher's imports (the run store, pydantic) cost a
#: quarter of a second that only the TensorBoard commands need.
_LAZY = {
    **dict.fromkeys(("Failed", "Launched", "Reused", "StartResult", "start", "stop"), "jupyter_px.tensorboard.launch"),
    **dict.fromkeys(
        ("ServerInfo", "last_active", "list_servers", "server_for_port", "touch"), "jupyter_px.tensorboard.registry"
    ),
    "Target": "jupyter_px.tensorboard.targets",
    **dict.fromkeys(
        ("BASE_URL_ENV", "PROXY_ROUTE", "PROXY_URL_ENV", "jupyter_base_url", "proxy_url"), "jupyter_px.tensorboard.urls"
    ),
}

if TYPE_CHECKING:
    from .launch import Failed, Launched, Reused, StartResult, start, stop
    from .registry import ServerInfo, last_active, list_servers, server_for_port, touch
    from .targets import Target
    from .urls import BASE_URL_ENV, PROXY_ROUTE, PROXY_URL_ENV, jupyter_base_url, proxy_url
else:
    __getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())

__all__ = [
    "BASE_URL_ENV",
    "DEFAULT_IDLE_TIMEOUT_S",
    "HOST",
    "IDLE_TIMEOUT_ENV",
    "PROXY_ROUTE",
    "PROXY_URL_ENV",
    "SERVER_PID_ENV",
    "TENSORFLOW_ENV",
    "WATCH_INTERVAL_S",
    "Failed",
    "Launched",
    "Reused",
    "ServerInfo",
    "StartResult",
    "Target",
    "idle_timeout_setting",
    "jupyter_base_url",
    "last_active",
    "list_servers",
    "proxy_url",
    "server_for_port",
    "start",
    "stop",
    "touch",
]
