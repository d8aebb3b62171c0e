"""Kubernetes' protobuf encoding, for the kinds kubectl sends in it.

kubectl 1.32 and later send built-in objects created through the typed clients (`create
configmap`, `create namespace`, `auth can-i`'s SelfSubjectAccessReview) as
`application/vnd.kubernetes.protobuf`, and accept it back first. The API server decodes them and
answers in the same encoding (apimachinery v1.33.0 pkg/runtime/serializer/protobuf/protobuf.go:
the 4 magic bytes `k8s\\x00`, then a `runtime.Unknown` holding the TypeMeta and the object's own
message). A kind this server has no message table for is refused with 415, as kube-apiserver
refuses protobuf for custom resources.

The message tables below are the field numbers of the upstream `generated.proto` files
(k8s.io/api v0.33.0 core/v1, authorization/v1; k8s.io/apimachinery v0.33.0 pkg/apis/meta/v1,
pkg/runtime), for the messages of those kinds only.
"""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"

# field number -> (json name, type); type: "string", "bytes", "bool", "int", "time", "map",
# "map-bytes", a message name, or a list of one of those ("repeated")
Field = tuple[str, Any]
MESSAGES: dict[str, dict[int, Field]] = {
    # apimachinery pkg/runtime/generated.proto
    "Unknown": {1: ("typeMeta", "TypeMeta"), 2: ("raw", "bytes"), 3: ("contentEncoding", "string"),
                4: ("contentType", "string")},
    "TypeMeta": {1: ("apiVersion", "string"), 2: ("kind", "string")},
    # apimachinery pkg/apis/meta/v1/generated.proto
    "ObjectMeta": {
        1: ("name", "string"), 2: ("generateName", "string"), 3: ("namespace", "string"), 4: ("selfLink", "string"),
        5: ("uid", "string"), 6: ("resourceVersion", "string"), 7: ("generation", "int"),
        8: ("creationTimestamp", "time"), 9: ("deletionTimestamp", "time"), 10: ("deletionGracePeriodSeconds", "int"),
        11: ("labels", "map"), 12: ("annotations", "map"), 13: ("ownerReferences", ["OwnerReference"]),
        14: ("finalizers", ["string"]), 17: ("managedFields", ["ManagedFieldsEntry"]),
    },
    "OwnerReference": {5: ("apiVersion", "string"), 1: ("kind", "string"), 3: ("name", "string"),
                       4: ("uid", "string"), 6: ("controller", "bool"), 7: ("blockOwnerDeletion", "bool")},
    "ManagedFieldsEntry": {1: ("manager", "string"), 2: ("operation", "string"), 3: ("apiVersion", "string"),
                           4: ("time", "time"), 6: ("fieldsType", "string"), 7: ("fieldsV1", "FieldsV1"),
                           8: ("subresource", "string")},
    "FieldsV1": {1: ("Raw", "bytes")},
    "Status": {1: ("metadata", "ListMeta"), 2: ("status", "string"), 3: ("message", "string"),
               4: ("reason", "string"), 5: ("details", "StatusDetails"), 6: ("code", "int")},
    "ListMeta": {1: ("selfLink", "string"), 2: ("resourceVersion", "string"), 3: ("continue", "string"),
                 4: ("remainingItemCount", "int")},
    "StatusDetails": {1: ("name", "string"), 2: ("group", "string"), 3: ("kind", "string"), 6: ("uid", "string"),
                      4: ("causes", ["StatusCause"]), 5: ("retryAfterSeconds", "int")},
    "StatusCause": {1: ("reason", "string"), 2: ("message", "string"), 3: ("field", "string")},
    # k8s.io/api core/v1/generated.proto
    "ConfigMap": {1: ("metadata", "ObjectMeta"), 4: ("immutable", "bool"), 2: ("data", "map"),
                  3: ("binaryData", "map-bytes")},
    "Secret": {1: ("metadata", "ObjectMeta"), 5: ("immutable", "bool"), 2: ("data", "map-bytes"),
               4: ("stringData", "map"), 3: ("type", "string")},
    "Namespace": {1: ("metadata", "ObjectMeta"), 2: ("spec", "NamespaceSpec"), 3: ("status", "NamespaceStatus")},
    "NamespaceSpec": {1: ("finalizers", ["string"])},
    "NamespaceStatus": {1: ("phase", "string")},
    "ServiceAccount": {1: ("metadata", "ObjectMeta"), 2: ("secrets", ["ObjectReference"]),
                       3: ("imagePullSecrets", ["LocalObjectReference"]), 4: ("automountServiceAccountToken", "bool")},
    "ObjectReference": {1: ("kind", "string"), 2: ("namespace", "string"), 3: ("name", "string"), 4: ("uid", "string"),
                        5: ("apiVersion", "string"), 6: ("resourceVersion", "string"), 7: ("fieldPath", "string")},
    "LocalObjectReference": {1: ("name", "string")},
    # k8s.io/api authorization/v1/generated.proto
    "SelfSubjectAccessReview": {1: ("metadata", "ObjectMeta"), 2: ("spec", "SelfSubjectAccessReviewSpec"),
                                3: ("status", "SubjectAccessReviewStatus")},
    "SelfSubjectAccessReviewSpec": {1: ("resourceAttributes", "ResourceAttributes"),
                                    2: ("nonResourceAttributes", "NonResourceAttributes")},
    "ResourceAttributes": {1: ("namespace", "string"), 2: ("verb", "string"), 3: ("group", "string"),
                           4: ("version", "string"), 5: ("resource", "string"), 6: ("subresource", "string"),
                           7: ("name", "string")},
    "NonResourceAttributes": {1: ("path", "string"), 2: ("verb", "string")},
    "SubjectAccessReviewStatus": {1: ("allowed", "bool"), 4: ("denied", "bool"), 2: ("reason", "string"),
                                  3: ("evaluationError", "string")},
}  # fmt: skip
#: the kinds served in protobuf (top-level messages)
KINDS = {"ConfigMap", "Secret", "Namespace", "ServiceAccount", "SelfSubjectAccessReview", "Status"}


class ProtobufError(ValueError):
    pass


# ---- wire format -------------------------------------------------------------------------------


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    out, at = [], 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 2:
            size, at = _varint(data, at)
            value, at = data[at : at + size], at + size
        elif wire == 1:
            value, at = data[at : at + 8], at + 8
        elif wire == 5:
            value, at = data[at : at + 4], at + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _encode_varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _encode_varint(number << 3 | wire)


def _length_delimited(number: int, payload: bytes) -> bytes:
    return _key(number, 2) + _encode_varint(len(payload)) + payload


# ---- messages <-> dicts --------------------------------------------------------------------------


def _rfc3339(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _seconds(text: str) -> int:
    return int(dt.datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.UTC).timestamp())


def decode_message(message: str, data: bytes) -> dict[str, Any]:
    table = MESSAGES[message]
    out: dict[str, Any] = {}
    for number, _wire, value in _fields(data):
        if number not in table:
            continue  # unknown fields are skipped, as gogo-protobuf's Unmarshal does
        name, kind = table[number]
        repeated = isinstance(kind, list)
        element = kind[0] if repeated else kind
        if element == "string":
            decoded: Any = bytes(value).decode()
        elif element == "bytes":
            decoded = bytes(value)
        elif element == "bool":
            decoded = bool(value)
        elif element == "int":
            decoded = value - (1 << 64) if value >= 1 << 63 else value
        elif element == "time":
            decoded = _time(value)
        elif element in ("map", "map-bytes"):
            entry = {n: v for n, _w, v in _fields(value)}
            key = bytes(entry.get(1, b"")).decode()
            raw = bytes(entry.get(2, b""))
            out.setdefault(name, {})[key] = raw.decode() if element == "map" else raw
            continue
        else:
            decoded = decode_message(element, value)
        if repeated:
            out.setdefault(name, []).append(decoded)
        else:
            out[name] = decoded
    return out


def _time(data: bytes) -> str:
    seconds = 0
    for number, _wire, value in _fields(data):
        if number == 1:
            seconds = value
    return _rfc3339(seconds)


def encode_message(message: str, obj: dict[str, Any]) -> bytes:
    table = MESSAGES[message]
    out = bytearray()
    for number, (name, kind) in sorted(table.items()):
        if name not in obj or obj[name] is None:
            continue
        value = obj[name]
        repeated = isinstance(kind, list)
        element = kind[0] if repeated else kind
        for item in value if repeated else [value]:
            if element == "string":
                out += _length_delimited(number, str(item).encode())
            elif element == "bytes":
                out += _length_delimited(number, item if isinstance(item, bytes) else str(item).encode())
            elif element == "bool":
                out += _key(number, 0) + _encode_varint(int(bool(item)))
            elif element == "int":
                out += _key(number, 0) + _encode_varint(int(item))
            elif element == "time":
                out += _length_delimited(number, _key(1, 0) + _encode_varint(_seconds(item)))
            elif element in ("map", "map-bytes"):
                for key in sorted(item):
                    raw = item[key]
                    raw = raw if isinstance(raw, bytes) else str(raw).encode()
                    out += _length_delimited(number, _length_delimited(1, key.encode()) + _length_delimited(2, raw))
            else:
                out += _length_delimited(number, encode_message(element, item))
    return bytes(out)


# ---- the envelope ---------------------------------------------------------------------------------


def decode(body: bytes) -> dict[str, Any]:
    """A request body in Kubernetes' protobuf encoding as the JSON object it stands for."""
    if not body.startswith(MAGIC):
        raise ProtobufError("provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]")
    unknown = decode_message("Unknown", body[len(MAGIC) :])
    meta = unknown.get("typeMeta") or {}
    kind = meta.get("kind", "")
    if kind not in KINDS:
        raise ProtobufError(f"no protobuf message for kind {kind!r}")
    obj = decode_message(kind, unknown.get("raw", b""))
    for name, value in list(obj.items()):
        if isinstance(value, dict) and any(isinstance(v, bytes) for v in value.values()):
            obj[name] = {k: base64.b64encode(v).decode() for k, v in value.items()}
    return {"apiVersion": meta.get("apiVersion", ""), "kind": kind, **obj}


def encode(obj: dict[str, Any]) -> bytes | None:
    """The object in Kubernetes' protobuf encoding, or None for a kind without a message here."""
    kind = obj.get("kind", "")
    if kind not in KINDS:
        return None
    body = dict(obj)
    for field, element in MESSAGES[kind].values():
        if element == "map-bytes" and isinstance(body.get(field), dict):
            body[field] = {k: base64.b64decode(v) for k, v in body[field].items()}
    raw = encode_message(kind, body)
    envelope = {"typeMeta": {"apiVersion": obj.get("apiVersion", ""), "kind": kind}, "raw": raw}
    return MAGIC + encode_message("Unknown", envelope)


def accepts(accept: str) -> bool:
    """Whether the client asks for protobuf before JSON."""
    first = accept.split(",")[0].split(";")[0].strip()
    return first == CONTENT_TYPE
