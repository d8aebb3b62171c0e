"""REST routes of run comparison: `POST px/api/compare` and `POST px/api/compare/tensorboard`.

Thin, as the other handlers (`base.PxHandler`: authenticated, authorized against `px`, errors
translated in one place): the body is parsed into `models.CompareRequest`, the work is
`jupyter_px.compare` in the read pool, the answer is checked against `models.Comparison`. The
curves' arrays are the exception: each run's are encoded to JSON once, when the run is read
(`service.digests.encode_points`), and spliced into the checked answer (`compare.comparison.encode`),
since formatting 200,000 floats per request would be most of the 300 ms this route may take.

POST, though comparing only reads: a selection of 200 run ids, metric names and directions is a
body, not a query string. It is authorized as `read`; TensorBoard over the runs is `execute`,
as for one run.

The server's run service keeps one digest cache for its life (`RunService.digests`), so a run is
read whole once and again only when its files change; a comparison of runs already read costs a
few stats per run plus the answer's JSON (see `benchmarks/bench_compare.py`).
"""

from __future__ import annotations

import time

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..compare.comparison import compare_runs, encode
from ..compare.figures import comparison_figures
from ..compare.selection import SelectionError, select_runs, sweep_objective
from ..service import RunDamaged, RunNotFound
from .base import PxHandler, finite_json
from .models import CompareRequest, CompareTensorBoardRequest, Comparison, dump

__all__ = ["CompareHandler", "CompareTensorBoardHandler"]


class CompareHandler(PxHandler):
    """`POST px/api/compare` `{runs?, pattern?, sweep?, metrics?, points?, optimization?, all_params?}`:
    per metric a curve per run (at most `points` points each, MinMaxLTTB) and the best run; the
    table of final and best values and the params that differ, and the params' view drawn. 400
    names what cannot be used (a run that does not exist, a pattern that matches nothing, a
    metric no run has)."""

    def _compare(self, body: CompareRequest) -> tuple[str, float]:
        """The answer's JSON text, and the thread's CPU time it took (ms)."""
        started = time.thread_time()
        run_ids = select_runs(self.px.service, body.runs, pattern=body.pattern, sweep=body.sweep)
        comparison = compare_runs(
            self.px.service,
            run_ids,
            metrics=body.metrics,
            points=body.points,
            optimization=sweep_objective(self.px.service, body.sweep, body.optimization),
            all_params=body.all_params,
            best=body.best,
        )
        figures = comparison_figures(comparison).model_dump(mode="json")
        checked = dump(Comparison, finite_json({**comparison.to_json(arrays=False), "figures": figures}))
        return encode(checked, comparison), (time.thread_time() - started) * 1000

    @web.authenticated
    @authorized("read")
    async def post(self) -> None:
        body = self.body(CompareRequest)
        try:
            answer, cpu_ms = await self.blocking(self._compare, body)
        except RunDamaged as error:  # as on every route of a run: 409 with what is damaged
            raise web.HTTPError(409, str(error)) from None
        except (SelectionError, RunNotFound, ValueError) as error:
            raise web.HTTPError(400, str(error)) from None
        # What the comparison cost the server in CPU, apart from waiting for a core (W3C Server-Timing).
        self.set_header("Server-Timing", f"compare;dur={cpu_ms:.1f}")
        self.set_header("Content-Type", "application/json")
        self.finish(answer)


class CompareTensorBoardHandler(PxHandler):
    """`POST px/api/compare/tensorboard` `{runs: [...]}`: one TensorBoard over these runs (started or
    reused), through the server's authenticated TensorBoard route."""

    @web.authenticated
    @authorized("execute")
    async def post(self) -> None:
        body = self.body(CompareTensorBoardRequest)
        try:
            run_ids = await self.blocking(select_runs, self.px.service, body.runs)
        except SelectionError as error:
            raise web.HTTPError(400, str(error)) from None
        await self.start_tensorboard(run_ids)
