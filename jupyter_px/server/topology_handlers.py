"""The topology routes: the schema the sidebar's form is generated from, validation, rendering.

GET  px/api/topology/schema      the topology's JSON Schema
POST px/api/topology/validate    the normalized topology and its YAML, or every problem
POST px/api/topology/render      what a submit would create on a cluster backend
"""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..service import BackendError
from ..sweeps.spec import parse_polyaxonfile
from ..topology import TopologyError, json_schema, parse_topology, to_dict, to_yaml
from ..topology.export import summary_text
from .base import PxHandler, problems_of
from .models import ErrorReply, Rendered, RenderRequest, ValidateRequest, Validation


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
            topo = parse_polyaxonfile(body.topology)
        except TopologyError as error:
            self.send(Validation, {"valid": False, **problems_of(error)})
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
            self.send(ErrorReply, problems_of(error), status=400)
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
            raise web.HTTPError(400, f"cannot render: {error}") from None
        self.send(
            Rendered,
            {
                "backend": rendered.backend,
                "objects": [{"kind": o["kind"], "name": o["metadata"]["name"]} for o in rendered.objects],
                "yaml": rendered.yaml,
            },
        )
