"""Where a browser reaches a TensorBoard we started: through the Jupyter server's authenticated
route `<base_url>px/tensorboard/<port>/` (which also works behind JupyterHub, where
`localhost:<port>` means the user's laptop), never only on `localhost:<port>`."""

from __future__ import annotations

import os

#: The Jupyter server's base URL, put in the server's environment (so its kernels') by the server
#: extension (`jupyter_px.server`), which imports this name from here.
BASE_URL_ENV = "JUPYTER_PX_BASE_URL"
#: Where TensorBoard's notebook integration looks for a proxy URL template ("%PORT%" replaced).
PROXY_URL_ENV = "TENSORBOARD_PROXY_URL"
#: The Jupyter server route (under its base URL) that serves our TensorBoards.
PROXY_ROUTE = "px/tensorboard/"


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
