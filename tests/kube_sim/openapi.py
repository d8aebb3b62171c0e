"""The API server's OpenAPI documents: `/openapi/v2` (one Swagger 2.0 document) and `/openapi/v3`
(a discovery document listing one OpenAPI 3.0 document per group version,
`/openapi/v3/apis/<group>/<version>?hash=...`), what kubectl reads for `apply` (whether the server
validates fields: a PATCH operation with the `fieldValidation` parameter, cli-runtime
pkg/resource/query_param_verifier_v3.go; strategic-merge keys), `explain` (the schemas, by their
`x-kubernetes-group-version-kind`) and `get --raw`.

Built-in kinds: the definitions `kubernetes-validate` ships for the served version (its
`_definitions.json`, Kubernetes' own OpenAPI definitions made into JSON schema: `$ref`s are put
back under `#/definitions/` or `#/components/schemas/`, `["string", "null"]` types back to one,
the `apiVersion`/`kind` enums it adds dropped, int-or-string and quantity back to their
formats). Custom resources: each served CRD version's structural schema under the name
apiextensions-apiserver gives it (v1.33.0 pkg/controller/openapi/builder/builder.go: the group
reversed, `org.kubeflow.v1.PyTorchJob`), with ObjectMeta for `metadata`. Paths: per resource the
collection and item operations of kube-apiserver's installer (staging/src/k8s.io/apiserver/pkg/
endpoints/installer.go), each with `x-kubernetes-action` and `x-kubernetes-group-version-kind`.
`/openapi/v2` also in protobuf (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`,
openapi_pb.py), which kubectl 1.27 asks for.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from .clone import clone
from .resources import Resource

Obj = dict[str, Any]


@functools.cache
def _definitions(version: str) -> dict[str, Obj]:
    """kubernetes-validate's definitions for `version` (`1.33.0`), or the nearest it has."""
    import kubernetes_validate

    root = Path(kubernetes_validate.__file__).resolve().parent / "kubernetes-json-schema"
    shipped = sorted(
        (tuple(int(x) for x in p.name[1:].split("-")[0].split(".")), p) for p in root.glob("v*-local") if p.is_dir()
    )
    wanted = tuple(int(x) for x in (version.split(".") + ["0", "0"])[:3])
    chosen = next((p for v, p in shipped if v[:2] == wanted[:2]), shipped[-1][1])
    return json.loads((chosen / "_definitions.json").read_text())["$defs"]


def _openapi(schema: Any, ref_prefix: str, name: str = "") -> Any:
    """A JSON-schema definition back into an OpenAPI schema."""
    if isinstance(schema, list):
        return [_openapi(s, ref_prefix) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if name.endswith("intstr.IntOrString"):
        return {"type": "string", "format": "int-or-string"}
    if name.endswith("resource.Quantity"):
        return {"type": "string", "format": "quantity"}
    out: Obj = {}
    for key, value in schema.items():
        if key == "$ref" and isinstance(value, str):
            target = value.split("/")[-1]
            out[key] = ref_prefix + target
        elif key == "type" and isinstance(value, list):
            kinds = [v for v in value if v != "null"]
            if kinds:
                out[key] = kinds[0]
        elif key == "properties" and isinstance(value, dict):
            props = {}
            for prop, sub in value.items():
                sub = _openapi(sub, ref_prefix)
                if prop in ("apiVersion", "kind") and isinstance(sub, dict):
                    sub.pop("enum", None)
                props[prop] = sub
            out[key] = props
        else:
            out[key] = _openapi(value, ref_prefix)
    return out


def _referenced(names: list[str], definitions: dict[str, Obj]) -> list[str]:
    """`names` and every definition they reach through `$ref`."""
    seen: list[str] = []
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen or name not in definitions:
            continue
        seen.append(name)
        text = json.dumps(definitions[name])
        for part in text.split('"$ref": "')[1:]:
            todo.append(part.split('"', 1)[0].split("/")[-1])
    return sorted(seen)


def crd_definition_name(group: str, version: str, kind: str) -> str:
    """builder.go: util.ToRESTFriendlyName of `<group>/<version>/<kind>` (the group reversed)."""
    return ".".join(list(reversed(group.split("."))) + [version, kind])


def _gvk_of(definition: Obj) -> list[Obj]:
    return definition.get("x-kubernetes-group-version-kind") or []


def _schemas_for(
    resources: tuple[Resource, ...] | list[Resource], server_version: str, ref_prefix: str
) -> dict[str, Obj]:
    definitions = _definitions(server_version)
    wanted: list[str] = []
    custom: dict[str, Obj] = {}
    for resource in resources:
        if resource.schema is not None:
            name = crd_definition_name(resource.group, resource.version, resource.kind)
            schema = clone(resource.schema)
            schema.setdefault("type", "object")
            props = schema.setdefault("properties", {})
            meta_ref = ref_prefix + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
            props["metadata"] = {"$ref": meta_ref} if ref_prefix.startswith("#/definitions") else {
                "allOf": [{"$ref": meta_ref}], "description": "Standard object's metadata."
            }  # fmt: skip
            for field_name in ("apiVersion", "kind"):
                props.setdefault(field_name, {"type": "string"})
            schema["x-kubernetes-group-version-kind"] = [
                {"group": resource.group, "kind": resource.kind, "version": resource.version}
            ]
            custom[name] = schema
            wanted.append("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
            continue
        for name, definition in definitions.items():
            if any(
                g.get("group", "") == resource.group and g.get("version") == resource.version
                and g.get("kind") == resource.kind
                for g in _gvk_of(definition)
            ):  # fmt: skip
                wanted.append(name)
    wanted += ["io.k8s.apimachinery.pkg.apis.meta.v1.Status", "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"]
    out = {n: _openapi(definitions[n], ref_prefix, n) for n in _referenced(wanted, definitions)}
    out.update(custom)
    return out


def _definition_of(resource: Resource, server_version: str) -> str:
    if resource.schema is not None:
        return crd_definition_name(resource.group, resource.version, resource.kind)
    for name, definition in _definitions(server_version).items():
        if any(
            (g.get("group", ""), g.get("version"), g.get("kind")) == (resource.group, resource.version, resource.kind)
            for g in _gvk_of(definition)
        ):
            return name
    return "io.k8s.apimachinery.pkg.apis.meta.v1.Status"


def _parameter(name: str, description: str, v3: bool, kind: str = "string", unique: bool = True) -> Obj:
    if v3:
        return {
            "name": name,
            "in": "query",
            "description": description,
            "schema": {"type": kind, "uniqueItems": unique},
        }
    return {"name": name, "in": "query", "description": description, "type": kind, "uniqueItems": unique}


WRITE_PARAMETERS = (
    ("dryRun", "When present, indicates that modifications should not be persisted."),
    ("fieldManager", "fieldManager is a name associated with the actor or entity that is making these changes."),
    (
        "fieldValidation",
        "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing "
        "unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict",
    ),
)


def _paths(resources: tuple[Resource, ...] | list[Resource], server_version: str, v3: bool) -> Obj:
    """installer.go's routes for each resource, with the extensions clients read."""
    ref_prefix = "#/components/schemas/" if v3 else "#/definitions/"
    paths: Obj = {}
    for resource in resources:
        prefix = f"/apis/{resource.group}/{resource.version}" if resource.group else f"/api/{resource.version}"
        base = (
            f"{prefix}/namespaces/{{namespace}}/{resource.plural}"
            if resource.namespaced
            else f"{prefix}/{resource.plural}"
        )
        gvk = {"group": resource.group, "kind": resource.kind, "version": resource.version}
        body_ref = ref_prefix + _definition_of(resource, server_version)
        kind_name = resource.kind

        def op(
            action: str, verb: str, write: bool = False, patch: bool = False,
            kind_name: str = kind_name, gvk: Obj = gvk, body_ref: str = body_ref,
        ) -> Obj:  # fmt: skip
            operation: Obj = {
                "description": f"{verb} {kind_name}",
                "operationId": f"{verb}{kind_name}",
                "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": gvk,
                "parameters": [],
                "responses": {"200": {"description": "OK"}, "401": {"description": "Unauthorized"}},
            }
            if v3:
                operation["responses"]["200"]["content"] = {"application/json": {"schema": {"$ref": body_ref}}}
            else:
                operation["responses"]["200"]["schema"] = {"$ref": body_ref}
            if write:
                operation["parameters"] += [_parameter(n, d, v3) for n, d in WRITE_PARAMETERS]
            if patch:
                operation["parameters"].append(
                    _parameter("force", 'Force is going to "force" Apply requests.', v3, "boolean")
                )
            return operation

        paths[base] = {"get": op("list", "list"), "post": op("post", "create", write=True),
                       "delete": op("deletecollection", "deletecollection")}  # fmt: skip
        paths[base + "/{name}"] = {
            "get": op("get", "read"),
            "put": op("put", "replace", write=True),
            "patch": op("patch", "patch", write=True, patch=True),
            "delete": op("delete", "delete"),
        }
        if resource.status_subresource:
            paths[base + "/{name}/status"] = {"get": op("get", "read"), "put": op("put", "replace", write=True),
                                              "patch": op("patch", "patch", write=True, patch=True)}  # fmt: skip
    return paths


def _info(server_version: str) -> Obj:
    return {"title": "Kubernetes", "version": f"v{server_version}"}


@functools.lru_cache(maxsize=16)
def v2(resources: tuple[Resource, ...], server_version: str) -> Obj:
    resources = tuple(resources)
    return {
        "swagger": "2.0",
        "info": _info(server_version),
        "paths": _paths(resources, server_version, v3=False),
        "definitions": _schemas_for(resources, server_version, "#/definitions/"),
        "securityDefinitions": {"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header"}},
        "security": [{"BearerToken": []}],
    }


def group_versions(resources: tuple[Resource, ...] | list[Resource]) -> dict[str, list[Resource]]:
    """`api/v1`, `apis/batch/v1`, ... -> the resources served there."""
    out: dict[str, list[Resource]] = {}
    for resource in resources:
        key = f"apis/{resource.group}/{resource.version}" if resource.group else f"api/{resource.version}"
        out.setdefault(key, []).append(resource)
    return out


@functools.lru_cache(maxsize=64)
def v3(resources: tuple[Resource, ...], server_version: str) -> Obj:
    return {
        "openapi": "3.0.0",
        "info": _info(server_version),
        "paths": _paths(resources, server_version, v3=True),
        "components": {
            "schemas": _schemas_for(resources, server_version, "#/components/schemas/"),
            "securitySchemes": {"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header"}},
        },
        "security": [{"BearerToken": []}],
    }


@functools.lru_cache(maxsize=16)
def v3_discovery(resources: tuple[Resource, ...], server_version: str) -> Obj:
    """`/openapi/v3`: each group version's document and its hash (the client caches by it)."""
    paths = {}
    for key, served in sorted(group_versions(resources).items()):
        digest = (
            hashlib.sha512(json.dumps(v3(tuple(served), server_version), sort_keys=True).encode()).hexdigest().upper()
        )
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest[:128]}"}
    return {"paths": paths}


#: kube-openapi pkg/handler/handler.go: the media type clients ask for (the `@` one, deprecated) and
#: the one the answer carries (Go's mime parser refuses the `@`)
V2_PROTOBUF_ASKED = ("application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
                     "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")  # fmt: skip
V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


@functools.lru_cache(maxsize=16)
def v2_protobuf(resources: tuple[Resource, ...], server_version: str) -> bytes:
    from .openapi_pb import document

    return document(v2(resources, server_version))
