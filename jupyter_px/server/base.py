"""What every REST handler shares: the server's state, the base handler, the error answers.

The handlers themselves are thin async methods over the run service the CLI and the magics use,
one module per resource (`topology_handlers`, `run_handlers`, `compare_handlers`,
`sweep_handlers`), registered from one table (`routes.py`); what they keep for the server's life
is in `PxState` (the run service with its caches, the run views).


Every handler is authenticated (`@web.authenticated`) and authorized (`@authorized` against the
`px` resource, so a deployment's Authorizer can allow reading runs but not submitting them:
submissions and TensorBoard are the `execute` action, stopping is `write`, the rest `read`).
`APIHandler` enforces XSRF for cookie sessions on every method but GET. Blocking work (the run
service: the store, backends, TensorBoard) runs in a thread so the event loop keeps serving, in
a bounded pool of its kind (`Pools`): reads; submits and stops of local runs; submits and stops of
Kubernetes runs (which wait on an API server that may hang); TensorBoard starts. Reads never wait
behind submits, nor local submits behind a hung cluster.
GET only reads: a run whose owner (supervisor, follower) is gone is answered as recorded, with
`owner_problem` saying so; the server's keeper, not a request, brings it up to date.

Bodies: every request body is parsed into its model in `models/` (a 400 names the field and
the value), every answer is built through its model there (`send`), so the wire format is declared
in one place, which the sidebar's TypeScript types are checked against.

Errors: 400 with the reason for a bad body or parameter, 404 for an unknown run or file, 409 for
a damaged run (its record or status cannot be read: the store's one line), 507 when the disk
under the run store is full; a reason is always one line a user can act on (`{"message": ...}`,
plus `problems` for topologies). Those translations are made for every route in `send_error`,
so no handler can forget one.
"""

from __future__ import annotations

import errno
import json
import logging
import math
from typing import TYPE_CHECKING, Any, TypeVar

from jupyter_server.base.handlers import APIHandler
from tornado import web

from .. import tensorboard
from ..service import RunDamaged, RunNotFound, RunService
from ..service.views import run_detail
from ..topology import TopologyError
from .models import Body, BodyError, CodeRequest, ErrorReply, Reply, TensorBoardStarted, dump, parse_body
from .pools import Kind, Pools
from .run_views import RunViews
from .settings import PxSettings
from .submission import SubmittedCode, code_from_notebook, code_from_script

if TYPE_CHECKING:
    from ..sweeps.service import SweepService

log = logging.getLogger(__name__)

#: The authorization resource of every jupyter-px route.
AUTH_RESOURCE = "px"

#: The most log bytes one request returns; the client continues from the returned offset.
MAX_LOG_CHUNK = 256 * 1024

#: The largest byte offset a logs request may name (a file offset is a signed 64-bit number).
MAX_OFFSET = 2**62

B = TypeVar("B", bound=Body)


def http_error_for(error: BaseException) -> web.HTTPError | None:
    """The 4xx/5xx answer (with its one-line reason) an exception out of a handler means, or None
    for a bug (answered 500 with a traceback in the log)."""
    if isinstance(error, RunDamaged):
        return web.HTTPError(409, str(error))
    if isinstance(error, RecursionError):
        return web.HTTPError(400, "the request is nested too deeply to be read")
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return web.HTTPError(507, "no space left under PX_HOME: free some disk space and try again")
    return None


def finite_json(data: Any) -> Any:
    """`data` with every NaN or infinity replaced by null: `JSON.parse` refuses the bare `NaN` and
    `Infinity` Python writes (values that say which they were travel beside them, e.g.
    `Series.nonfinite`)."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: finite_json(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite_json(value) for value in data]
    return data


class PxState:
    """What the handlers share for the server's life: the extension's settings, the run service
    (and its store) and the caches over it. Handlers reach configuration only through `settings`
    (`app.JupyterPxApp`)."""

    def __init__(self, settings: PxSettings):
        self.settings = settings
        self.service = RunService(home=settings.home, kubernetes=settings.kubernetes_overrides())
        self.run_views = RunViews(self.service)  # the views the extension polls
        self.pools = Pools()
        self._sweeps: SweepService | None = None

    @property
    def sweeps(self) -> SweepService:
        """The sweep service, over the run service the other routes use (made on first use)."""
        if self._sweeps is None:
            from ..sweeps.service import SweepService

            self._sweeps = SweepService(runs=self.service)
        return self._sweeps

    def close(self) -> None:
        self.pools.shutdown()


class PxHandler(APIHandler):
    auth_resource = AUTH_RESOURCE

    def initialize(self, state: PxState) -> None:
        self.px = state

    async def blocking(self, function: Any, *args: Any, kind: Kind = "read", **kwargs: Any) -> Any:
        """`function(*args, **kwargs)` in a thread of the `kind` pool (`Pools`)."""
        return await self.px.pools.run(kind, function, *args, **kwargs)

    def send_error(self, status_code: int = 500, **kwargs: Any) -> None:
        """Every route answers a damaged run, a too-deep body and a full disk alike (`http_error_for`)."""
        exc_info = kwargs.get("exc_info")
        if exc_info is not None and not isinstance(exc_info[1], web.HTTPError):
            translated = http_error_for(exc_info[1])
            if translated is not None:
                status_code, kwargs["exc_info"] = translated.status_code, (web.HTTPError, translated, exc_info[2])
        super().send_error(status_code, **kwargs)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """jupyter_server's JSON error (`message`, `reason`), with the reason as written: its
        `log_message` is a log format string (`%` doubled when it has no arguments), which
        jupyter_server sends as it is, so a reason quoting `50%` would read `50%%`."""
        exc_info = kwargs.get("exc_info")
        error = exc_info[1] if exc_info else None
        if not isinstance(error, web.HTTPError) or not error.get_message():
            super().write_error(status_code, **kwargs)
            return
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"message": error.get_message(), "reason": error.reason}))

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        translated = http_error_for(value) if value is not None else None
        if translated is not None:  # an answer with its reason, not a bug: no traceback
            log.warning("jupyter_px: %s %s: %s", self.request.method, self.request.path, translated.log_message)
            return
        super().log_exception(typ, value, tb)

    def body(self, model: type[B]) -> B:
        """The request body as `model`; 400 naming the field and the value when it is not one."""
        try:
            return parse_body(model, self.request.body)
        except BodyError as error:
            raise web.HTTPError(400, str(error)) from None

    def int_argument(self, name: str, default: int | None, minimum: int | None = 0) -> int | None:
        text = self.get_argument(name, None)
        if text is None or text == "":
            return default
        try:
            value = int(text)
        except ValueError:
            raise web.HTTPError(400, f"{name}: {text!r} is not a whole number") from None
        if minimum is not None and value < minimum:
            raise web.HTTPError(400, f"{name}: {value} is below {minimum}")
        if abs(value) > MAX_OFFSET:
            raise web.HTTPError(400, f"{name}: {value} is too large (at most {MAX_OFFSET})")
        return value

    async def resolve(self, ref: str) -> str:
        """The run id `ref` names, once its record and status read: every route of a damaged run
        answers alike (409 with the store's line naming what is damaged), before doing anything."""
        try:
            return await self.blocking(self.px.service.readable, ref)
        except RunNotFound as error:
            raise web.HTTPError(404, str(error)) from None

    def _detail(self, run_id: str) -> dict[str, Any]:
        """One run's detail as a read sees it (observed: a gone owner is reported, not repaired)."""
        view = self.px.service.view(run_id)
        return run_detail(view.record, view.status, view.owner_problem)

    async def read_code(self, request: CodeRequest) -> SubmittedCode:
        """The code a request names, read through the contents manager (never outside its root)."""
        if request.kind == "notebook":
            return await code_from_notebook(self.contents_manager, request.path, request.tag)
        return await code_from_script(self.contents_manager, request.path)

    def send(self, model: type[Reply], data: Any, status: int = 200) -> None:
        """Answer with `data` as `model` (checked: a field the model does not declare is a bug)."""
        self.write_json(dump(model, data), status)

    async def start_tensorboard(self, run_ids: list[str]) -> None:
        """Start (or reuse) one TensorBoard for `run_ids` in the TensorBoard pool and answer with
        where it is served (`send_tensorboard`)."""
        idle = self.px.settings.tensorboard_idle_timeout
        result = await self.blocking(self.px.service.tensorboard, run_ids, kind="tensorboard", idle_timeout=idle)
        self.send_tensorboard(result)

    def send_tensorboard(self, result: tensorboard.StartResult) -> None:
        """Answer a TensorBoard start: where it is served (the Jupyter server's authenticated route,
        so it works behind JupyterHub) and whether it was launched or reused; 503 with its output
        when it could not start."""
        if isinstance(result, tensorboard.Failed):
            message = f"TensorBoard could not start: {result.reason}"
            self.send(ErrorReply, {"message": message, "output": result.output[-4000:]}, status=503)
            return
        self.send(
            TensorBoardStarted,
            {
                "status": "reused" if isinstance(result, tensorboard.Reused) else "launched",
                "url": tensorboard.proxy_url(result.info.port, self.base_url),
                "port": result.info.port,
                "key": result.info.key,
            },
        )

    def write_json(self, data: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(finite_json(data), allow_nan=False))


def problems_of(error: TopologyError) -> dict[str, Any]:
    return {"message": str(error), **error.to_dict()}
