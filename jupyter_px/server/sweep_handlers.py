"""The sweeps' REST routes, under `<base_url>px/api/sweeps`: authenticated and authorized against
the `px` resource like every route of the extension, the work in `SweepService` (the same calls
as `jupyter px sweep ...`), blocking reads in the extension's read pool.

    GET    px/api/sweeps          the sweeps, newest first (`jupyter px sweep list --json`'s shape;
                                  with `?trials=true` each with its trials, for the sidebar's groups)
    GET    px/api/sweeps/<ref>    one sweep with its trials (`jupyter px sweep status --json`)
    GET    px/api/sweeps/<ref>/view   what a tuner looks at, and its figures (`presentation.sweep_figures.SweepView`)
    DELETE px/api/sweeps/<ref>    stop it: its running trials, then its controller
"""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..presentation.sweep_figures import sweep_view
from ..service import SweepNotFound
from ..sweeps.view import sweep_json
from .base import PxHandler
from .models import Sweep, SweepsPage
from .pools import HERE


class SweepsHandler(PxHandler):
    """`GET px/api/sweeps?limit=&trials=`: sweep summaries, newest first; with `trials=true` each
    with its trials (the sidebar groups the runs list by them: one request, not one per sweep)."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        limit = self.int_argument("limit", None, minimum=1)
        trials = self._trials_argument()
        views = await self.blocking(self.px.sweeps.list, limit)
        self.send(SweepsPage, {"sweeps": [sweep_json(v, trials=trials) for v in views]})

    def _trials_argument(self) -> bool:
        text = self.get_argument("trials", "false")
        if text not in ("true", "false"):
            raise web.HTTPError(400, f"trials: {text!r} is not true or false")
        return text == "true"


class SweepHandler(PxHandler):
    """`GET px/api/sweeps/<ref>`: one sweep and its trials, as read (a gone controller is
    reported in `owner_problem`). `DELETE`: stop it."""

    async def _resolve(self, ref: str) -> str:
        try:
            return await self.blocking(self.px.sweeps.resolve, ref)
        except SweepNotFound as error:
            raise web.HTTPError(404, str(error)) from None

    async def _sweep_detail(self, sweep_id: str) -> dict[str, Any]:
        return sweep_json(await self.blocking(self.px.sweeps.view, sweep_id))

    @web.authenticated
    @authorized
    async def get(self, ref: str) -> None:
        self.send(Sweep, await self._sweep_detail(await self._resolve(ref)))

    @web.authenticated
    @authorized("write")
    async def delete(self, ref: str) -> None:
        sweep_id = await self._resolve(ref)
        await self.blocking(self.px.sweeps.stop, sweep_id, kind=HERE)
        self.send(Sweep, await self._sweep_detail(sweep_id))


class SweepViewHandler(SweepHandler):
    """`GET px/api/sweeps/<ref>/view`: the sweep's view-model (history, importance, parallel
    coordinates, slices, contour, Pareto front), built from one read of the sweep, and each
    view's plotly figure (`presentation.sweep_figures`: the extension puts them in its theme)."""

    @web.authenticated
    @authorized
    async def get(self, ref: str) -> None:
        model = await self.blocking(self.px.sweeps.view_model, await self._resolve(ref))
        self.write_json(sweep_view(model).model_dump(mode="json"))
