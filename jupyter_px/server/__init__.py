"""The jupyter_server extension: tells kernels the server's base URL, and a small REST API.

* **Base URL for kernels.** A kernel does not know the URL its notebook is served under, yet
  the TensorBoard it embeds must be reached at `<base_url>px/tensorboard/<port>/` (see
  `tensorboard_proxy`, authenticated by this server; behind JupyterHub the base URL is `/user/<name>/`). At load
  time the extension puts the server's `base_url` in its own environment as
  `JUPYTER_PX_BASE_URL`; kernels the server starts inherit it (jupyter_server builds a kernel's
  environment from `os.environ`). `%px_tensorboard` and the monitor's button read it.
* **REST API** (authenticated like every Jupyter API): `GET <base_url>px/api/runs` lists runs,
  `GET <base_url>px/api/runs/<run-id>` gives one run's record and status.

Enabled by `jupyter-config/jupyter_server_config.d/jupyter_px.json` (installed with the package),
which also enables jupyter-server-proxy, the route TensorBoard is embedded through.
"""

from __future__ import annotations

import os
from typing import Any

BASE_URL_ENV = "JUPYTER_PX_BASE_URL"


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "jupyter_px.server"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from jupyter_server.utils import url_path_join

    from .handlers import RunHandler, RunsHandler
    from .tensorboard_proxy import handlers as tensorboard_handlers

    base_url = serverapp.base_url or "/"
    os.environ[BASE_URL_ENV] = base_url
    os.environ["JUPYTER_PX_SERVER_PID"] = str(os.getpid())  # our TensorBoards end with this server
    serverapp.web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base_url, "px/api/runs"), RunsHandler),
            (url_path_join(base_url, r"px/api/runs/([a-z0-9][a-z0-9-]{0,39})"), RunHandler),
            *tensorboard_handlers(base_url),
        ],
    )
    serverapp.log.info("jupyter_px: REST API at %spx/api/runs; kernels get %s=%s", base_url, BASE_URL_ENV, base_url)


# jupyter_server < 2 looked for this name.
load_jupyter_server_extension = _load_jupyter_server_extension
