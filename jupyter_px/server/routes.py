"""Every route of the extension in one table: the REST API under `<base_url>px/api/` and the
TensorBoard route. `JupyterPxApp` registers exactly these, each handler given the server's state.

Read it as the API's table of contents; each handler's docstring says what it answers.
"""

from __future__ import annotations

from typing import Any

from .base import PxHandler, PxState
from .compare_handlers import CompareHandler, CompareTensorBoardHandler
from .run_handlers import (
    ReplicaKillHandler,
    RunDirectoryHandler,
    RunHandler,
    RunLogsHandler,
    RunMetricsHandler,
    RunsHandler,
    RunStacksHandler,
    RunTensorBoardHandler,
    RunViewHandler,
)
from .sweep_handlers import SweepHandler, SweepsHandler, SweepViewHandler
from .tensorboard_proxy import ROUTE as TENSORBOARD_ROUTE
from .tensorboard_proxy import TensorBoardPorts, TensorBoardProxyHandler
from .topology_handlers import TopologyRenderHandler, TopologySchemaHandler, TopologyValidateHandler
from .warm_handlers import WarmHandler

#: A run or sweep reference in a URL: an id, a name or `last`; resolved (and validated) by its store.
REF = r"([^/]+)"

#: (path under the base URL, handler): every REST route, in the order the docs list them.
ROUTES: list[tuple[str, type[PxHandler]]] = [
    ("px/api/topology/schema", TopologySchemaHandler),
    ("px/api/topology/validate", TopologyValidateHandler),
    ("px/api/topology/render", TopologyRenderHandler),
    ("px/api/runs", RunsHandler),
    (f"px/api/runs/{REF}", RunHandler),
    (f"px/api/runs/{REF}/directory", RunDirectoryHandler),
    (f"px/api/runs/{REF}/logs", RunLogsHandler),
    (f"px/api/runs/{REF}/metrics", RunMetricsHandler),
    (f"px/api/runs/{REF}/tensorboard", RunTensorBoardHandler),
    (f"px/api/runs/{REF}/view", RunViewHandler),
    (f"px/api/runs/{REF}/stacks", RunStacksHandler),
    (f"px/api/runs/{REF}/replicas/([a-z]{{1,16}})-([0-9]{{1,5}})/kill", ReplicaKillHandler),
    ("px/api/compare", CompareHandler),
    ("px/api/compare/tensorboard", CompareTensorBoardHandler),
    ("px/api/sweeps", SweepsHandler),
    (f"px/api/sweeps/{REF}", SweepHandler),
    (f"px/api/sweeps/{REF}/view", SweepViewHandler),
    ("px/api/warm", WarmHandler),
]


def handlers(state: PxState, tensorboard_ports: TensorBoardPorts) -> list[tuple[str, type, dict[str, Any]]]:
    """The tornado handlers of every route (paths relative to the base URL, which the extension
    system prefixes), the TensorBoard route's last."""
    rest = [(path + "/?", handler, {"state": state}) for path, handler in ROUTES]
    proxy = (TENSORBOARD_ROUTE, TensorBoardProxyHandler, {"absolute_url": False, "ports": tensorboard_ports})
    return [*rest, proxy]
