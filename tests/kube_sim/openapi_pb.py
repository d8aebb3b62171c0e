"""`/openapi/v2` in protobuf, as kube-apiserver serves it to a client that asks for
`application/com.github.proto-openapi.spec.v2@v1.0+protobuf` (client-go discovery OpenAPISchema,
what kubectl 1.27's `explain` and `apply` read).

The messages of gnostic's OpenAPI v2 model (google/gnostic-models v0.6.9 openapiv2/OpenAPIv2.proto,
field numbers below): a Document of Info, Paths (each PathItem's operations, their query
parameters, responses and vendor extensions) and Definitions (Schemas). Vendor extensions and
other free values are `Any`s holding YAML text (kube-openapi pkg/util/proto reads
`x-kubernetes-group-version-kind` from it)."""

from __future__ import annotations

import struct
from typing import Any

import yaml

from .protobuf import _encode_varint, _key, _length_delimited

Obj = dict[str, Any]


def _string(number: int, value: str) -> bytes:
    return _length_delimited(number, value.encode()) if value else b""


def _bool(number: int, value: Any) -> bytes:
    return _key(number, 0) + _encode_varint(1) if value else b""


def _int(number: int, value: Any) -> bytes:
    return _key(number, 0) + _encode_varint(int(value)) if value is not None else b""


def _double(number: int, value: Any) -> bytes:
    return _key(number, 1) + struct.pack("<d", float(value)) if value is not None else b""


def _any(number: int, value: Any) -> bytes:
    """Any { string yaml = 2 }"""
    text = yaml.safe_dump(value, default_flow_style=False) if isinstance(value, (dict, list)) else _scalar(value)
    return _length_delimited(number, _string(2, text))


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true\n" if value else "false\n"
    return yaml.safe_dump(value).removesuffix("...\n")


def _extensions(number: int, obj: Obj) -> bytes:
    """repeated NamedAny vendor_extension: NamedAny { string name = 1; Any value = 2 }"""
    out = b""
    for name in sorted(k for k in obj if k.startswith("x-")):
        out += _length_delimited(number, _string(1, name) + _any(2, obj[name]))
    return out


def schema(s: Obj) -> bytes:
    out = _string(1, s.get("$ref", "")) + _string(2, s.get("format", "")) + _string(3, s.get("title", ""))
    out += _string(4, s.get("description", ""))
    if "default" in s:
        out += _any(5, s["default"])
    out += _double(6, s.get("multipleOf")) + _double(7, s.get("maximum")) + _bool(8, s.get("exclusiveMaximum"))
    out += _double(9, s.get("minimum")) + _bool(10, s.get("exclusiveMinimum"))
    out += _int(11, s.get("maxLength")) + _int(12, s.get("minLength")) + _string(13, s.get("pattern", ""))
    out += _int(14, s.get("maxItems")) + _int(15, s.get("minItems")) + _bool(16, s.get("uniqueItems"))
    out += _int(17, s.get("maxProperties")) + _int(18, s.get("minProperties"))
    for name in s.get("required") or []:
        out += _string(19, name)
    for value in s.get("enum") or []:
        out += _any(20, value)
    additional = s.get("additionalProperties")
    if isinstance(additional, dict):  # AdditionalPropertiesItem { Schema schema = 1; bool boolean = 2 }
        out += _length_delimited(21, _length_delimited(1, schema(additional)))
    elif isinstance(additional, bool):
        out += _length_delimited(21, _key(2, 0) + _encode_varint(int(additional)))
    if s.get("type"):  # TypeItem { repeated string value = 1 }
        kinds = s["type"] if isinstance(s["type"], list) else [s["type"]]
        out += _length_delimited(22, b"".join(_string(1, k) for k in kinds))
    if isinstance(s.get("items"), dict):  # ItemsItem { repeated Schema schema = 1 }
        out += _length_delimited(23, _length_delimited(1, schema(s["items"])))
    for sub in s.get("allOf") or []:
        out += _length_delimited(24, schema(sub))
    if s.get("properties"):  # Properties { repeated NamedSchema additional_properties = 1 }
        named = b"".join(
            _length_delimited(1, _string(1, name) + _length_delimited(2, schema(sub)))
            for name, sub in s["properties"].items()
        )
        out += _length_delimited(25, named)
    out += _bool(27, s.get("readOnly"))
    if "example" in s:
        out += _any(30, s["example"])
    return out + _extensions(31, s)


def _parameter(p: Obj) -> bytes:
    """ParametersItem { Parameter parameter = 1 } > Parameter { NonBodyParameter = 2 } >
    NonBodyParameter { QueryParameterSubSchema = 3 }"""
    query = _bool(1, p.get("required")) + _string(2, p.get("in", "")) + _string(3, p.get("description", ""))
    query += _string(4, p.get("name", "")) + _string(6, p.get("type", "")) + _bool(20, p.get("uniqueItems"))
    return _length_delimited(1, _length_delimited(2, _length_delimited(3, query)))


def _operation(o: Obj) -> bytes:
    out = _string(3, o.get("description", "")) + _string(5, o.get("operationId", ""))
    for p in o.get("parameters") or []:
        out += _length_delimited(8, _parameter(p))
    codes = b""
    for code, response in (o.get("responses") or {}).items():
        # Response { description = 1; SchemaItem schema = 2 } in ResponseValue { Response response = 1 }
        body = _string(1, response.get("description", ""))
        if isinstance(response.get("schema"), dict):
            body += _length_delimited(2, _length_delimited(1, schema(response["schema"])))
        codes += _length_delimited(1, _string(1, code) + _length_delimited(2, _length_delimited(1, body)))
    out += _length_delimited(9, codes)
    return out + _extensions(13, o)


def document(doc: Obj) -> bytes:
    info = doc.get("info") or {}
    out = _string(1, doc.get("swagger", "2.0"))
    out += _length_delimited(2, _string(1, info.get("title", "")) + _string(2, info.get("version", "")))
    paths = b""
    for path, item in doc.get("paths", {}).items():
        body = b""
        for number, verb in ((2, "get"), (3, "put"), (4, "post"), (5, "delete"), (8, "patch")):
            if verb in item:
                body += _length_delimited(number, _operation(item[verb]))
        paths += _length_delimited(2, _string(1, path) + _length_delimited(2, body))
    out += _length_delimited(8, paths)
    definitions = b"".join(
        _length_delimited(1, _string(1, name) + _length_delimited(2, schema(s)))
        for name, s in doc.get("definitions", {}).items()
    )
    return out + _length_delimited(9, definitions)
