"""The jupyter_server extension: tells kernels the server's base URL, and the REST API.

* **Base URL for kernels.** A kernel does not know the URL its notebook is served under, yet
  the TensorBoard it embeds must be reached at `<base_url>px/tensorboard/<port>/` (see
  `tensorboard_proxy`; authenticated by this server; behind JupyterHub the base URL is
  `/user/<name>/`). At load time the extension puts the server's `base_url` in its own environment as
  `JUPYTER_PX_BASE_URL`; kernels the server starts inherit it (jupyter_server builds a kernel's
  environment from `os.environ`). `%px_tensorboard` and the monitor's button read it.
* **REST API** under `<base_url>px/api/` (`handlers.py`; routes in `ROUTES`), what the
  JupyterLab sidebar talks to: the topology schema and validation, the runs list, submitting a
  notebook or script, one run, stop, logs, metrics, TensorBoard. Every route is authenticated
  and authorized against the `px` resource.

Enabled by `jupyter-config/jupyter_server_config.d/jupyter_px.json` (installed with the package),
which also enables jupyter-server-proxy, the route TensorBoard is embedded through.
"""

from __future__ import annotations

import os
from typing import Any

from ..tensorboard import BASE_URL_ENV, SERVER_PID_ENV

#: A run reference in a URL: an id, a name or `last`; resolved (and validated) by the run store.
_REF = r"([^/]+)"

#: (path under the base URL, handler class name in `handlers`): every route this extension adds.
ROUTES = [
    ("px/api/topology/schema", "TopologySchemaHandler"),
    ("px/api/topology/validate", "TopologyValidateHandler"),
    ("px/api/topology/render", "TopologyRenderHandler"),
    ("px/api/runs", "RunsHandler"),
    (f"px/api/runs/{_REF}", "RunHandler"),
    (f"px/api/runs/{_REF}/logs", "RunLogsHandler"),
    (f"px/api/runs/{_REF}/metrics", "RunMetricsHandler"),
    (f"px/api/runs/{_REF}/tensorboard", "RunTensorBoardHandler"),
]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "jupyter_px.server"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from jupyter_server.utils import url_path_join

    from . import handlers
    from .tensorboard_proxy import handlers as tensorboard_handlers

    base_url = serverapp.base_url or "/"
    os.environ[BASE_URL_ENV] = base_url
    os.environ[SERVER_PID_ENV] = str(os.getpid())  # the TensorBoards it proxies end with this server
    state = handlers.PxState()
    serverapp.web_app.add_handlers(
        ".*$",
        [
            *(
                (url_path_join(base_url, path) + "/?", getattr(handlers, name), {"state": state})
                for path, name in ROUTES
            ),
            *tensorboard_handlers(base_url),
        ],
    )
    serverapp.log.info("jupyter_px: REST API at %spx/api/; kernels get %s=%s", base_url, BASE_URL_ENV, base_url)
