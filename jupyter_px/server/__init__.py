"""The jupyter_server extension: the REST API behind the sidebar, the TensorBoard route, the keeper.

* **REST API** under `<base_url>px/api/` (every route in `routes.py`, a module of handlers per
  resource over `base.py`; bodies are the pydantic models of `models/`), what the JupyterLab
  sidebar talks to: the topology schema and validation, the runs list, submitting a notebook or
  script, one run, stop, logs, metrics, TensorBoard, comparison, sweeps. Every route is
  authenticated and authorized against the `px` resource.
* **TensorBoard** under `<base_url>px/tensorboard/<port>/` (`tensorboard_proxy.py`).
* **The keeper**, configuration (traitlets of `JupyterPxApp`) and what kernels are told: `app.py`.

Enabled by `jupyter-config/jupyter_server_config.d/jupyter_px.json` (installed with the package),
which also enables jupyter-server-proxy, the route TensorBoard is embedded through.
"""

from __future__ import annotations

from typing import Any

from .app import JupyterPxApp
from .routes import ROUTES

__all__ = ["ROUTES", "JupyterPxApp"]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    return [{"module": "jupyter_px.server", "app": JupyterPxApp}]
