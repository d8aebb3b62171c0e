"""`GET px/api/runs/<ref>/view`: the run's view-model, the one shape every front-end shows.

The JupyterLab extension's run output and panels render it (`presentation.view_models.RunViewModel`,
checked against the sidebar's `IRunViewModel`). The server keeps one `RunViewSource` per run it is
asked about (a bounded number, least recently used go first), so a view polled every second
reads only what the run's logs and metrics grew by. Authorized as `read`; it only reads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..compare.changes import ChangesSince
from ..compare.digest import DigestCache
from ..presentation.run_view import RunViewSource
from ..runstore import RunNotFound
from .handlers import PxHandler, PxState

__all__ = ["VIEW_ROUTES", "RunViews", "RunViewHandler"]


class RunViews:
    """`RunViewSource`s by run id for the server's life (at most `size`)."""

    def __init__(self, state: PxState, digests: DigestCache, size: int = 64):
        self.state, self.digests, self.size = state, digests, size
        self._lock = threading.Lock()
        self._sources: OrderedDict[str, RunViewSource] = OrderedDict()

    def view(self, run_id: str) -> dict[str, Any]:
        with self._lock:
            source = self._sources.pop(run_id, None)
        if source is None:
            service = self.state.service
            record = service.record(run_id)
            source = RunViewSource(service, run_id, changes=ChangesSince(service.store, record, self.digests))
        with self._lock:
            self._sources[run_id] = source
            while len(self._sources) > self.size:
                self._sources.popitem(last=False)
        return source.view().model_dump(mode="json")

    def forget(self, run_id: str) -> None:
        with self._lock:
            self._sources.pop(run_id, None)


class RunViewHandler(PxHandler):
    """`GET px/api/runs/<ref>/view`: `RunViewModel`; 404 for an unknown (or deleted) run."""

    def initialize(self, state: PxState, views: RunViews) -> None:  # type: ignore[override]
        super().initialize(state)
        self.views = views

    @web.authenticated
    @authorized("read")
    async def get(self, ref: str) -> None:
        run_id = await self.resolve(ref)
        try:
            view = await self.blocking(self.views.view, run_id)
        except RunNotFound as error:  # deleted between the resolve and the read
            self.views.forget(run_id)
            raise web.HTTPError(404, str(error)) from None
        self.write_json(view)  # built as a RunViewModel: checked when it was made


#: (path under the base URL, handler class), registered by `app.JupyterPxApp` with `route_arguments`.
VIEW_ROUTES = [(r"px/api/runs/([^/]+)/view", RunViewHandler)]


def route_arguments(state: PxState, digests: DigestCache) -> dict[str, Any]:
    return {"state": state, "views": RunViews(state, digests)}
