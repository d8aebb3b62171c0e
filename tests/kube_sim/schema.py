"""Schemas: custom resources against their CRD's structural schema (pruning, defaulting,
validation), core objects against Kubernetes' own OpenAPI schemas (the `kubernetes-validate`
package ships them) plus the hand-written rules of the core validation that a schema cannot say.

The order is the API server's: decode (type errors are a 400, not a 422), prune unknown fields
(silently for custom resources; for core objects a `Warning` header, or a 400 under
`fieldValidation=Strict`), default, validate (422 `Invalid` with one cause per field error).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from .clone import clone
from .errors import FieldError, invalid, not_supported, required

# ---- field paths -------------------------------------------------------------------------------


def child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


# ---- structural schemas (custom resources) -----------------------------------------------------

_JSON_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _is_type(value: Any, wanted: str) -> bool:
    if wanted == "integer":
        return isinstance(value, int) and not isinstance(value, bool) or isinstance(value, float) and value.is_integer()
    if wanted == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _JSON_TYPES[wanted])


#: The fields an embedded resource (and the root) keeps whatever its schema says.
# kubernetes v1.33.0 staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning/algorithm.go:
# at the root and under x-kubernetes-embedded-resource, apiVersion/kind/metadata are kept and
# metadata is pruned as ObjectMeta, never by the schema.
_META_FIELDS = ("apiVersion", "kind", "metadata")


def prune(value: Any, schema: dict[str, Any], root: bool = True) -> Any:
    """Drop every field the structural schema does not name (apiextensions pruning): in place,
    returns the value. `x-kubernetes-preserve-unknown-fields: true` keeps unknown fields below it."""
    if isinstance(value, dict):
        embedded = root or schema.get("x-kubernetes-embedded-resource")
        properties = schema.get("properties")
        additional = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields")
        for name in list(value):
            if embedded and name in _META_FIELDS:
                continue
            if properties is not None and name in properties:
                prune(value[name], properties[name], root=False)
            elif isinstance(additional, dict):
                prune(value[name], additional, root=False)
            elif not preserve and additional is not True:
                del value[name]
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            prune(item, schema["items"], root=False)
    return value


def default(value: Any, schema: dict[str, Any]) -> Any:
    """Fill in `default`s where a field is absent (apiextensions structural defaulting:
    kubernetes v1.33.0 staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting/algorithm.go,
    which also replaces a null by the default when the field is not nullable). In place."""
    if isinstance(value, dict):
        for name, sub in (schema.get("properties") or {}).items():
            if "default" in sub and (name not in value or (value[name] is None and not sub.get("nullable"))):
                value[name] = clone(sub["default"])
            if name in value:
                default(value[name], sub)
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            for name in value:
                if name not in (schema.get("properties") or {}):
                    default(value[name], additional)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            default(item, schema["items"])
    return value


_MISSING = object()


@functools.lru_cache(maxsize=512)
def _cel_program(rule: str) -> Any:
    import celpy

    environment = celpy.Environment()
    return environment.program(environment.compile(rule))


def _cel_errors(value: Any, old: Any, schema: dict[str, Any], path: str) -> list[FieldError]:
    """The schema node's `x-kubernetes-validations` (CEL), as apiextensions evaluates them
    (kubernetes v1.33.0 staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/
    validation.go): `self` is the value; a rule that names `oldSelf` is a transition rule, checked
    only on update when the old value exists; a failure is `field.Invalid(path, <schema type>,
    message)` (the message, else `failed rule: <rule>`), the path `<nil>` at the root, extended by
    the rule's `fieldPath`; the rule's `reason` picks the error type."""
    rules = schema.get("x-kubernetes-validations") or []
    if not rules:
        return []
    try:
        import celpy
    except ImportError:  # without cel-python the rules are not evaluated (the `test` extra has it)
        return []
    errs: list[FieldError] = []
    for rule in rules:
        text = rule.get("rule", "")
        transition = "oldSelf" in text
        if transition and old is _MISSING:
            continue
        activation = {"self": celpy.json_to_cel(value)}
        if transition:
            activation["oldSelf"] = celpy.json_to_cel(old)
        try:
            result = _cel_program(text).evaluate(activation)
        except Exception as error:  # an evaluation error fails the rule, as the real one does
            result = error
        if isinstance(result, celpy.celtypes.BoolType) and bool(result):
            continue
        where = path + (rule.get("fieldPath") or "") if path or rule.get("fieldPath") else "<nil>"
        where = where.lstrip(".") if where != "<nil>" else where
        kind = {
            "FieldValueForbidden": "FieldValueForbidden",
            "FieldValueRequired": "FieldValueRequired",
            "FieldValueDuplicate": "FieldValueDuplicate",
        }.get(rule.get("reason", ""), "FieldValueInvalid")
        message = rule.get("message") or f"failed rule: {text}"
        errs.append(FieldError(kind, where, schema.get("type", "object"), message))
    return errs


def validate_structural(
    value: Any, schema: dict[str, Any], path: str = "", old: Any = _MISSING, root: bool = False
) -> list[FieldError]:
    """Validate against an OpenAPI v3 structural schema, with the messages of kube-openapi's
    validator as apiextensions turns them into field errors (kubernetes v1.33.0
    staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/validation/validation.go
    ValidateCustomResource; kube-openapi pkg/validation/errors/schema.go for the wording)."""
    errs: list[FieldError] = []
    shown = path or "<root>"
    if value is None and (schema.get("nullable") or "type" not in schema):
        return errs
    if schema.get("x-kubernetes-int-or-string"):
        if not (isinstance(value, str) or _is_type(value, "integer")):
            errs.append(
                FieldError(
                    "FieldValueTypeInvalid",
                    path,
                    _type_name(value),
                    f'{shown} in body must be of type integer,string: "{_type_name(value)}"',
                )
            )
        return errs
    wanted = schema.get("type")
    if wanted and not _is_type(value, wanted):
        # schema.go InvalidType: `%s in body must be of type %s: %q`, the value being the type's name
        errs.append(
            FieldError(
                "FieldValueTypeInvalid",
                path,
                _type_name(value),
                f'{shown} in body must be of type {wanted}: "{_type_name(value)}"',
            )
        )
        return errs
    if "enum" in schema and value not in schema["enum"]:
        errs.append(not_supported(path, value, tuple(str(v) for v in schema["enum"])))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errs.append(invalid(path, value, f"{shown} in body should be greater than or equal to {schema['minimum']}"))
        if "maximum" in schema and value > schema["maximum"]:
            errs.append(invalid(path, value, f"{shown} in body should be less than or equal to {schema['maximum']}"))
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errs.append(invalid(path, value, f"{shown} in body should be at least {schema['minLength']} chars long"))
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errs.append(
                FieldError("FieldValueTooLong", path, value, f"may not be more than {schema['maxLength']} bytes")
            )
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errs.append(invalid(path, value, f"{shown} in body should match '{schema['pattern']}'"))
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errs.append(invalid(path, value, f"{shown} in body should have at least {schema['minItems']} items"))
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errs.append(
                FieldError("FieldValueTooMany", path, len(value), f"must have at most {schema['maxItems']} items")
            )
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                # transition rules under a list: only atomic lists' items have no old value
                errs += validate_structural(item, items, index(path, i))
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        previous = old if isinstance(old, dict) else {}
        for name in schema.get("required") or ():
            if name not in value and not (root and name in _META_FIELDS):
                errs.append(required(child(path, name), ""))
        for name, item in value.items():
            if root and name in _META_FIELDS:
                continue
            before = previous.get(name, _MISSING)
            if name in properties:
                errs += validate_structural(item, properties[name], child(path, name), before)
            elif isinstance(schema.get("additionalProperties"), dict):
                # kube-openapi names a map value `<map>.<key>` (object_validator.go), not `[key]`
                errs += validate_structural(item, schema["additionalProperties"], child(path, name), before)
    for alternative in ("anyOf", "oneOf"):
        if alternative in schema and not any(
            not validate_structural(value, option, path) for option in schema[alternative]
        ):
            errs.append(invalid(path, value, f"{shown} in body must match {alternative[:-2]} of the schemas"))
    if not errs:
        errs += _cel_errors(value, old, schema, path)
    return errs


# ---- core objects (kubernetes-validate's schemas) ---------------------------------------------

#: The Kubernetes minor whose schemas are used (the newest kubernetes-validate ships).
SCHEMA_VERSION = "1.37.0"


@functools.cache
def _core_validator(kind: str, api_version: str) -> Any:
    """A jsonschema validator for one kind, strict (unknown fields are errors we turn into
    warnings or pruning), from kubernetes-validate's copy of Kubernetes' OpenAPI schemas."""
    import jsonschema
    from kubernetes_validate import utils
    from referencing import Registry, Resource

    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    folder = f"kubernetes-json-schema/v{SCHEMA_VERSION}-local-strict"
    schema = utils.schema_contents(f"{folder}/{kind.lower()}-{group_version}.json", SCHEMA_VERSION)
    definitions = utils.schema_contents(f"{folder}/_definitions.json", SCHEMA_VERSION)
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


def _go_path(path: list[Any]) -> str:
    return ".".join(str(p) for p in path if not isinstance(p, int))


def _dotted(path: list[Any]) -> str:
    out = ""
    for part in path:
        out = index(out, part) if isinstance(part, int) else child(out, str(part))
    return out


class DecodeError(Exception):
    """A body the API server could not decode into the kind's Go type (a 400 there)."""


def check_core(obj: dict[str, Any]) -> tuple[list[str], list[FieldError]]:
    """Schema-check a core object: returns (unknown field paths, field errors); raises
    DecodeError for a value of the wrong JSON type. Unknown fields are left in place (the caller
    prunes them with `drop_unknown` or refuses under strict field validation)."""
    validator = _core_validator(obj["kind"], obj["apiVersion"])
    unknown: list[str] = []
    errs: list[FieldError] = []
    for error in validator.iter_errors(obj):
        where = list(error.absolute_path)
        if error.validator == "additionalProperties":
            known = set(error.schema.get("properties") or {})
            for name in sorted(set(error.instance) - known):
                unknown.append(_dotted([*where, name]))
        elif error.validator in ("type", "oneOf", "anyOf"):
            # staging/src/k8s.io/apimachinery/pkg/runtime/serializer/json: the decoder's message,
            # wrapped by the handler as `<Kind> in version "<v>" cannot be handled as a <Kind>`
            raise DecodeError(
                f'{obj["kind"]} in version "{obj["apiVersion"].rpartition("/")[2]}" cannot be handled as a '
                f"{obj['kind']}: json: cannot unmarshal {_type_name(error.instance)} into Go struct field "
                f".{_go_path(where)} of type {error.validator_value if error.validator == 'type' else 'intstr'}"
            )
        elif error.validator == "required":
            for name in error.validator_value:
                if name not in error.instance:
                    errs.append(required(_dotted([*where, name])))
        elif error.validator == "enum":
            errs.append(not_supported(_dotted(where), error.instance, tuple(map(str, error.validator_value))))
        else:
            errs.append(invalid(_dotted(where), error.instance, error.message))
    return unknown, errs


def drop_unknown(obj: dict[str, Any], paths: list[str]) -> None:
    for path in paths:
        parts = re.findall(r"[^.\[\]]+|\[\d+\]", path)
        node: Any = obj
        for part in parts[:-1]:
            node = node[int(part[1:-1])] if part.startswith("[") else node[part]
        node.pop(parts[-1], None)


# ---- hand-written core rules -------------------------------------------------------------------
# kubernetes v1.33.0 staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go: the
# name formats and their messages.

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def name_errors(name: str, rule: str) -> list[FieldError]:
    """metadata.name against a kind's name rule (`subdomain`, `label`, `dns1035`)."""
    if rule == "dns1035":
        if len(name) > 63:
            return [invalid("metadata.name", name, "must be no more than 63 characters")]
        return [] if DNS1035_LABEL.match(name) else [invalid("metadata.name", name, DNS1035_MSG)]
    if rule == "label":
        if len(name) > 63:
            return [invalid("metadata.name", name, "must be no more than 63 characters")]
        return [] if DNS1123_LABEL.match(name) else [invalid("metadata.name", name, LABEL_MSG)]
    if len(name) > 253:
        return [invalid("metadata.name", name, "must be no more than 253 characters")]
    return [] if DNS1123_SUBDOMAIN.match(name) else [invalid("metadata.name", name, SUBDOMAIN_MSG)]


def pod_spec_errors(spec: dict[str, Any], path: str = "spec") -> list[FieldError]:
    """A few of kubernetes v1.33.0 pkg/apis/core/validation/validation.go ValidatePodSpec's rules
    the OpenAPI schema cannot say: containers required, names RFC 1123 labels and unique across
    init and app containers, image required, restartPolicy one of three, port names IANA_SVC_NAME."""
    errs: list[FieldError] = []
    containers = spec.get("containers") or []
    if not containers:
        errs.append(required(child(path, "containers")))
    seen: set[str] = set()
    for field in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(field) or []):
            where = index(child(path, field), i)
            name = container.get("name") or ""
            if name and not DNS1123_LABEL.match(name):
                errs.append(invalid(child(where, "name"), name, LABEL_MSG))
            elif name in seen:
                errs.append(FieldError("FieldValueDuplicate", child(where, "name"), name))
            seen.add(name)
            if not container.get("image"):
                errs.append(required(child(where, "image")))
            for j, port in enumerate(container.get("ports") or []):
                port_name = port.get("name")
                if port_name is not None and (
                    len(port_name) > 15
                    or not re.match(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$", port_name)
                    or not re.search(r"[a-z]", port_name)
                    or "--" in port_name
                ):
                    # validation.go IsValidPortName
                    errs.append(
                        invalid(
                            child(index(child(where, "ports"), j), "name"),
                            port_name,
                            "must be no more than 15 characters"
                            if len(port_name) > 15
                            else "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                        )
                    )
    policy = spec.get("restartPolicy")
    if policy is not None and policy not in ("Always", "OnFailure", "Never"):
        errs.append(not_supported(child(path, "restartPolicy"), policy, ("Always", "OnFailure", "Never")))
    return errs


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()
