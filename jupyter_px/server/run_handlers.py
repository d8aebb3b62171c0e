"""The run routes: list and submit, one run (read, stop), its directory, its logs, metrics and
TensorBoard.

    GET    px/api/runs                  run summaries newest first (ETag; 304 when unchanged)
    POST   px/api/runs                  submit a notebook or a script (201: its run, or its sweep
                                        when the topology has a sweep section, at px/api/sweeps/<id>)
    GET    px/api/runs/<ref>            one run, observed
    DELETE px/api/runs/<ref>            stop it
    DELETE px/api/runs/<id>/directory   delete a finished run's directory
    GET    px/api/runs/<ref>/logs       a replica's log from an offset
    GET    px/api/runs/<ref>/metrics    the points since a cursor
    POST   px/api/runs/<ref>/tensorboard  TensorBoard for the run (and others)
    GET    px/api/runs/<ref>/view       the run's view-model (`RunViewModel`), as every view shows it
    GET    px/api/runs/<ref>/stacks     the newest stacks snapshot kept in the run
    POST   px/api/runs/<ref>/stacks     every live replica's stacks, taken now (and kept)
    POST   px/api/runs/<ref>/replicas/<key>/kill  end one running replica on purpose
"""

from __future__ import annotations

import signal

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..service import (
    ROLE_PATTERN,
    RUN_ID_PATTERN,
    BackendError,
    NoStacks,
    RunActive,
    RunDamaged,
    RunNotFound,
    Submission,
)
from ..start import start
from ..sweeps.view import sweep_json
from ..topology import TopologyError, parse_topology
from .base import MAX_LOG_CHUNK, PxHandler, problems_of
from .models import (
    ErrorReply,
    KillRequest,
    LogChunk,
    MetricsPage,
    ReplicaKilled,
    RunDeleted,
    RunDetail,
    RunsPage,
    StacksSnapshot,
    SubmitRequest,
    Sweep,
    TensorBoardRequest,
)
from .pools import change_kind


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
            etag = await self.blocking(self.px.service.runs_etag)
            self.set_header("Etag", etag)
            if self.check_etag_header():
                self.set_status(304)
                self.finish()
                return
        page = await self.blocking(self.px.service.runs_page, offset, limit or None)
        progress = {}
        for summary in page.runs:
            if not summary["finished"]:
                found = await self.blocking(self.px.service.metric_progress, summary["run_id"])
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
            self.send(ErrorReply, problems_of(error), status=400)
            return
        topo = self.px.settings.with_image(topo)
        code = await self.read_code(code_request)
        try:
            submission = Submission(code.source, topo, name=name or None, workdir=code.workdir, origin="sidebar")
            started = await self.blocking(
                start, submission, self.px.service, self.px.sweeps, kind=change_kind(topo.backend_kind)
            )
        except TopologyError as error:  # the sweep section's problems
            self.send(ErrorReply, problems_of(error), status=400)
            return
        except (BackendError, ValueError, FileNotFoundError) as error:  # ResourceUnavailable, bad name...
            raise web.HTTPError(400, f"the run could not start on the {topo.backend_kind} backend: {error}") from None
        if started.is_sweep:  # a topology with a sweep section starts a sweep: its trials are the runs
            self.set_header("Location", self.base_url.rstrip("/") + f"/px/api/sweeps/{started.id}")
            self.send(Sweep, sweep_json(await self.blocking(self.px.sweeps.view, started.id)), status=201)
            return
        self.set_header("Location", self.base_url.rstrip("/") + f"/px/api/runs/{started.id}")
        self.send(RunDetail, await self.blocking(self._detail, started.id), status=201)


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
            try:  # a Kubernetes run's leftovers are deleted through its API server: that family's pool
                backend = (await self.blocking(self.px.service.record, run_id)).backend
            except RunDamaged:
                backend = "local"
            removed = await self.blocking(self.px.service.delete, run_id, kind=change_kind(backend))
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
        from ..service import MetricsCursorError

        run_id = await self.resolve(ref)
        cursor = self.get_argument("since", None) or None
        try:
            data = await self.blocking(self.px.service.metric_points_since, run_id, cursor)
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
            if not await self.blocking(self.px.service.exists, other):
                raise web.HTTPError(404, f"also: no run {other!r}")
        run_ids = list(dict.fromkeys([run_id, *also]))  # in order, once each
        await self.start_tensorboard(run_ids)


class RunViewHandler(PxHandler):
    """`GET px/api/runs/<ref>/view`: the run's `RunViewModel` (`run_views.RunViews`); 404 for an
    unknown (or deleted) run. It only reads."""

    @web.authenticated
    @authorized("read")
    async def get(self, ref: str) -> None:
        run_id = await self.resolve(ref)
        try:
            view = await self.blocking(self.px.run_views.view, run_id)
        except RunNotFound as error:  # deleted between the resolve and the read
            self.px.run_views.forget(run_id)
            raise web.HTTPError(404, str(error)) from None
        self.write_json(view)  # built as a RunViewModel: checked when it was made


class RunStacksHandler(PxHandler):
    """`POST px/api/runs/<ref>/stacks`: every live replica's Python stacks, taken now, grouped by
    identical stack with the frames of the run's code named by notebook cell (a finished run
    answers its newest kept snapshot); `GET`: the newest snapshot kept in the run (taken on request
    or when a stall was noticed), without asking the replicas. 404 when there is none; 409 when
    the run's backend cannot take them."""

    @web.authenticated
    @authorized("read")
    async def get(self, ref: str) -> None:
        await self._answer(ref, take=False)

    @web.authenticated
    @authorized("execute")
    async def post(self, ref: str) -> None:
        await self._answer(ref, take=True)

    async def _answer(self, ref: str, take: bool) -> None:
        run_id = await self.resolve(ref)
        kind = "read"
        if take:  # the backend's pool: it signals the replicas and waits for their answers
            kind = change_kind((await self.blocking(self.px.service.record, run_id)).backend)
        try:
            snapshot = await self.blocking(self.px.service.stacks, run_id, take, kind=kind)
        except NoStacks as error:
            raise web.HTTPError(404, str(error)) from None
        except BackendError as error:
            raise web.HTTPError(409, str(error)) from None
        self.send(StacksSnapshot, snapshot)


class ReplicaKillHandler(PxHandler):
    """`POST px/api/runs/<ref>/replicas/<role>-<index>/kill` `{"signal"?: "KILL"}`: one running
    replica ended on purpose, as a crash would (`jupyter px kill`: the run's menu of a replica);
    the run then does what its `termination` says. 404 for a replica the run does not have; 409
    when it is not running, or its backend cannot kill one replica."""

    @web.authenticated
    @authorized("execute")
    async def post(self, ref: str, role: str, index: str) -> None:
        body = self.body(KillRequest)
        run_id = await self.resolve(ref)
        if not ROLE_PATTERN.match(role):
            raise web.HTTPError(400, f"replica: {role!r} is not a role name (master, worker, ps, evaluator)")
        status = await self.blocking(self.px.service.status, run_id)
        if (role, int(index)) not in {(r.role, r.index) for r in status.replicas}:
            raise web.HTTPError(404, f"run {run_id} has no replica {role}-{index}")
        kind = change_kind((await self.blocking(self.px.service.record, run_id)).backend)
        signum = int(signal.Signals[f"SIG{body.signal}"])
        try:
            said = await self.blocking(self.px.service.kill, run_id, role, int(index), signum, kind=kind)
        except BackendError as error:
            raise web.HTTPError(409, str(error)) from None
        self.send(ReplicaKilled, {"run_id": run_id, "replica": f"{role}-{index}", "said": said})
