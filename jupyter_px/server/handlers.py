"""REST handlers: thin async methods over the run service the CLI and the magics use.

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

Bodies: every request body is parsed into its model in `models.py` (a 400 names the field and
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
from typing import Any, TypeVar

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web

from .. import tensorboard
from ..presentation.run_json import run_detail
from ..runstore import RunDamaged, RunNotFound, RunStore
from ..runstore.layout import ROLE_PATTERN, RUN_ID_PATTERN
from ..service import BackendError, RunActive, RunService
from ..topology import TopologyError, json_schema, parse_topology, to_dict, to_yaml
from ..topology.export import summary_text
from .metrics_cache import MetricsCache
from .models import (
    Body,
    BodyError,
    CodeRequest,
    ErrorReply,
    LogChunk,
    MetricsPage,
    Rendered,
    RenderRequest,
    Reply,
    RunDeleted,
    RunDetail,
    RunsPage,
    SubmitRequest,
    TensorBoardRequest,
    TensorBoardStarted,
    ValidateRequest,
    Validation,
    dump,
    parse_body,
)
from .pools import Kind, Pools, change_kind
from .runs_index import RunsIndex
from .settings import PxSettings
from .submission import SubmittedCode, code_from_notebook, code_from_script

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

    def __init__(self, store: RunStore | None = None, settings: PxSettings | None = None):
        self.store = store or RunStore(settings.home if settings else None)
        self.settings = settings or PxSettings(
            home=self.store.home, tensorboard_idle_timeout=tensorboard.idle_timeout_setting()
        )
        self.service = RunService(self.store, kubernetes=self.settings.kubernetes_overrides())
        self.runs = RunsIndex(self.service)
        self.metrics = MetricsCache(self.store)
        self.pools = Pools()

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
        try:
            return await self.blocking(self.px.service.resolve, ref)
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


def _problems(error: TopologyError) -> dict[str, Any]:
    return {"message": str(error), **error.to_dict()}


# ---------------------------------------------------------------------------------------------
# Topology


class TopologySchemaHandler(PxHandler):
    """`GET px/api/topology/schema`: the JSON Schema the sidebar's form is generated from."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.write_json(json_schema())


class TopologyValidateHandler(PxHandler):
    """`POST px/api/topology/validate` `{"topology": {...} | "yaml"}`: the normalized topology and
    its YAML, or every problem with its field path. An invalid topology is an answer (200,
    `valid: false`), not an error: the form shows the problems beside the fields."""

    @web.authenticated
    @authorized("read")
    async def post(self) -> None:
        body = self.body(ValidateRequest)
        try:
            topo = parse_topology(body.topology)
        except TopologyError as error:
            self.send(Validation, {"valid": False, **_problems(error)})
            return
        self.send(
            Validation,
            {"valid": True, "topology": to_dict(topo), "yaml": to_yaml(topo), "summary": summary_text(topo)},
        )


class TopologyRenderHandler(PxHandler):
    """`POST px/api/topology/render` `{"topology", "backend"?, "name"?, "notebook" | "script"?}`:
    the Kubernetes manifests the run would create (what `jupyter px render` prints), as YAML and
    as a list of kinds and names. Nothing is contacted; without code, an empty `main.py` stands
    in. A topology a backend cannot express is a 400 that says why (e.g. per-index overrides on
    Kubeflow)."""

    @web.authenticated
    @authorized("read")
    async def post(self) -> None:
        body = self.body(RenderRequest)
        backend, name = body.backend, body.name or "run"
        try:
            topo = self.px.settings.with_image(parse_topology(body.topology))
        except TopologyError as error:
            self.send(ErrorReply, _problems(error), status=400)
            return
        code = await self.read_code(body.code) if body.code else None
        try:
            rendered = await self.blocking(
                self.px.service.render,
                topo,
                code.source if code else None,
                backend=backend,
                name=name,
                namespace=self.px.settings.kubernetes_namespace,
            )
        except (BackendError, ValueError) as error:
            raise web.HTTPError(400, f"cannot render for Kubernetes: {error}") from None
        self.send(
            Rendered,
            {
                "backend": rendered.backend,
                "objects": [{"kind": o["kind"], "name": o["metadata"]["name"]} for o in rendered.objects],
                "yaml": rendered.yaml,
            },
        )


# ---------------------------------------------------------------------------------------------
# Runs


class RunsHandler(PxHandler):
    """`GET px/api/runs?offset=&limit=`: run summaries newest first, with an ETag (a poll whose
    `If-None-Match` matches gets 304 and no body). `POST px/api/runs`: submit a notebook or script."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        offset = self.int_argument("offset", 0)
        limit = self.int_argument("limit", 100)
        assert offset is not None
        if self.request.headers.get("If-None-Match"):
            etag = await self.blocking(self.px.runs.current_etag)
            self.set_header("Etag", etag)
            if self.check_etag_header():
                self.set_status(304)
                self.finish()
                return
        page = await self.blocking(self.px.runs.page, offset, limit or None)
        progress = {}
        for summary in page.runs:
            if not summary["finished"]:
                found = await self.blocking(self.px.metrics.progress, summary["run_id"])
                if found:
                    progress[summary["run_id"]] = found
        self.set_header("Etag", page.etag)
        self.set_header("Cache-Control", "no-cache")
        self.send(
            RunsPage,
            {"runs": page.runs, "total": page.total, "offset": offset, "limit": limit, "progress": progress},
        )

    @web.authenticated
    @authorized("execute")
    async def post(self) -> None:
        body = self.body(SubmitRequest)
        name, code_request = body.name, body.code
        assert code_request is not None  # SubmitRequest requires one
        try:
            topo = parse_topology(body.topology)
        except TopologyError as error:
            self.send(ErrorReply, _problems(error), status=400)
            return
        if topo.backend_kind != "local":
            topo = self.px.settings.with_image(topo)
        code = await self.read_code(code_request)
        try:
            run_id = await self.blocking(
                self.px.service.submit,
                code.source,
                topo,
                kind=change_kind(topo.backend_kind),
                name=name or None,
                workdir=code.workdir,
                submitted_from="sidebar",
            )
        except (BackendError, ValueError, FileNotFoundError) as error:  # ResourceUnavailable, bad name...
            raise web.HTTPError(400, f"the run could not start on the {topo.backend_kind} backend: {error}") from None
        self.set_header("Location", self.base_url.rstrip("/") + f"/px/api/runs/{run_id}")
        self.send(RunDetail, await self.blocking(self._detail, run_id), status=201)


class RunHandler(PxHandler):
    """`GET px/api/runs/<ref>`: one run as recorded, observed (a read: a gone supervisor is
    reported in `owner_problem`, not repaired). `DELETE px/api/runs/<ref>`: stop it (waits for
    the replicas to end)."""

    @web.authenticated
    @authorized
    async def get(self, ref: str) -> None:
        run_id = await self.resolve(ref)
        self.send(RunDetail, await self.blocking(self._detail, run_id))

    @web.authenticated
    @authorized("write")
    async def delete(self, ref: str) -> None:
        run_id = await self.resolve(ref)
        record = await self.blocking(self.px.service.record, run_id)
        try:
            await self.blocking(self.px.service.stop, run_id, kind=change_kind(record.backend))
        except BackendError as error:
            raise web.HTTPError(409, f"run {run_id} could not be stopped: {error}") from None
        self.send(RunDetail, await self.blocking(self._detail, run_id))


class RunDirectoryHandler(PxHandler):
    """`DELETE px/api/runs/<id>/directory`: remove a finished run's directory (its record, logs,
    metrics and outputs), the sidebar's Delete and "Clear finished", after what it left outside the
    store (a Kubernetes run's job and pods), which the answer names. The run is named by its
    exact id (never a name or `last`, which could mean another run by the time it is read); a
    run that has not finished is refused with 409 (stop it first)."""

    @web.authenticated
    @authorized("write")
    async def delete(self, run_id: str) -> None:
        if not RUN_ID_PATTERN.match(run_id):
            raise web.HTTPError(400, f"run id {run_id!r} is not valid: lowercase letters, digits and '-'")
        try:
            record = await self.blocking(self.px.service.record, run_id)
            removed = await self.blocking(self.px.service.delete, run_id, kind=change_kind(record.backend))
        except RunNotFound:
            raise web.HTTPError(404, f"no run {run_id!r}") from None
        except (RunActive, BackendError) as error:  # a run whose leftovers could not go is kept
            raise web.HTTPError(409, str(error)) from None
        self.send(RunDeleted, {"run_id": run_id, "deleted": True, "removed": removed})


class RunLogsHandler(PxHandler):
    """`GET px/api/runs/<ref>/logs?role=&index=&offset=`: log text of one replica from byte
    `offset` (negative: the last bytes), at most 256 KiB, and the offset to continue from."""

    @web.authenticated
    @authorized
    async def get(self, ref: str) -> None:
        run_id = await self.resolve(ref)
        role = self.get_argument("role", "master")
        if not ROLE_PATTERN.match(role):
            raise web.HTTPError(400, f"role: {role!r} is not a role name (master, worker, ps, evaluator)")
        index = self.int_argument("index", 0)
        offset = self.int_argument("offset", 0, minimum=None)
        assert index is not None and offset is not None
        status = await self.blocking(self.px.service.status, run_id)
        replicas = await self.blocking(self.px.service.replicas, run_id, status)
        if replicas and (role, index) not in replicas:
            raise web.HTTPError(404, f"run {run_id} has no replica {role}-{index}")
        text, next_offset = await self.blocking(self.px.service.read_log, run_id, role, index, offset, MAX_LOG_CHUNK)
        self.send(
            LogChunk,
            {
                "replica": f"{role}-{index}",
                "text": text,
                "offset": next_offset,
                "finished": status.state.finished,
            },
        )


class RunMetricsHandler(PxHandler):
    """`GET px/api/runs/<ref>/metrics?since=CURSOR`: the points not had yet at CURSOR (all without
    it), per replica and metric, and the cursor to pass as `since` next time (opaque: a position
    in each metrics file, see `jupyter_px.runstore.metrics_cursor`)."""

    @web.authenticated
    @authorized
    async def get(self, ref: str) -> None:
        from ..runstore.metrics_cursor import MetricsCursorError

        run_id = await self.resolve(ref)
        cursor = self.get_argument("since", None) or None
        try:
            data = await self.blocking(self.px.metrics.points_since, run_id, cursor)
        except MetricsCursorError as error:
            raise web.HTTPError(400, f"since: {error}") from None
        status = await self.blocking(self.px.service.status, run_id)
        self.send(MetricsPage, {"run_id": run_id, "finished": status.state.finished, **data})


class RunTensorBoardHandler(PxHandler):
    """`POST px/api/runs/<ref>/tensorboard`: start (or reuse) TensorBoard for the run; the URL is
    the Jupyter server's authenticated proxy route, so it works behind JupyterHub."""

    @web.authenticated
    @authorized("execute")
    async def post(self, ref: str) -> None:
        run_id = await self.resolve(ref)
        also = self.body(TensorBoardRequest).also
        for other in also:
            if not await self.blocking(self.px.store.exists, other):
                raise web.HTTPError(404, f"also: no run {other!r}")
        run_ids = list(dict.fromkeys([run_id, *also]))  # in order, once each
        result = await self.blocking(
            self.px.service.tensorboard,
            run_ids,
            kind="tensorboard",
            idle_timeout=self.px.settings.tensorboard_idle_timeout,
        )
        self.send_tensorboard(result)
