"""Authenticated, read-only REST handlers over the run store."""

from __future__ import annotations

import json

from jupyter_server.base.handlers import APIHandler
from tornado import web

from ..runstore import RunNotFound, RunStore


class RunsHandler(APIHandler):
    """`GET px/api/runs?limit=N`: the newest runs with their state."""

    @web.authenticated
    def get(self) -> None:
        text = self.get_argument("limit", "100")
        try:
            limit = int(text)
        except ValueError:
            raise web.HTTPError(400, f"limit: {text!r} is not a whole number") from None
        if limit < 0:
            raise web.HTTPError(400, f"limit: {limit} is negative (0 means all runs)")
        runs = []
        for record, status in RunStore().list(limit=limit or None):
            runs.append(
                {
                    "run_id": record.run_id,
                    "name": record.name,
                    "backend": record.backend,
                    "state": status.state.value,
                    "created_at": record.created_at,
                    "started_at": status.started_at,
                    "finished_at": status.finished_at,
                    "submitted_from": record.submitted_from,
                    "replicas": [{"key": r.key, "state": r.state.value} for r in status.replicas],
                }
            )
        self.finish(json.dumps({"runs": runs}))


class RunHandler(APIHandler):
    """`GET px/api/runs/<run-id>`: record and status of one run."""

    @web.authenticated
    def get(self, run_id: str) -> None:
        store = RunStore()
        try:
            record, status = store.record(run_id), store.status(run_id)
        except RunNotFound:
            raise web.HTTPError(404, f"no run {run_id!r}") from None
        self.finish(json.dumps({"record": record.model_dump(mode="json"), "status": status.model_dump(mode="json")}))
