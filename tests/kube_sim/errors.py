"""API errors shaped like the real API server's `Status` objects, and field errors.

kubernetes v1.33.0 staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go: every constructor
below mirrors one there (NewNotFound, NewAlreadyExists, NewConflict, NewInvalid, NewBadRequest,
NewForbidden, NewResourceExpired, NewTooManyRequests); the messages are theirs.
kubernetes v1.33.0 staging/src/k8s.io/apimachinery/pkg/util/validation/field/errors.go: the
field error types (`FieldValueRequired`, ...) and `ErrorBody()`'s wording.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


class ApiError(Exception):
    """An answer other than success: the HTTP code and the Status body, plus extra headers."""

    def __init__(self, status: dict[str, Any], headers: dict[str, str] | None = None):
        super().__init__(status.get("message", ""))
        self.status = status
        self.code = int(status["code"])
        self.headers = headers or {}


def status(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details is not None:
        body["details"] = details
    return body


def _qualified(name: str, group: str) -> str:
    """schema.GroupResource.String(): `pods`, `pytorchjobs.kubeflow.org`."""
    return f"{name}.{group}" if group else name


def not_found(resource: str, group: str, name: str) -> ApiError:
    # errors.go NewNotFound: `%s %q not found`, details.kind is the resource (plural)
    return ApiError(
        status(
            404,
            "NotFound",
            f'{_qualified(resource, group)} "{name}" not found',
            {"name": name, "group": group, "kind": resource} if group else {"name": name, "kind": resource},
        )
    )


def not_found_path() -> ApiError:
    # an unknown path: the API server's NotFound handler answers without details
    return ApiError(status(404, "NotFound", "the server could not find the requested resource"))


def already_exists(resource: str, group: str, name: str) -> ApiError:
    # errors.go NewAlreadyExists: `%s %q already exists`
    details = {"name": name, "kind": resource, **({"group": group} if group else {})}
    return ApiError(status(409, "AlreadyExists", f'{_qualified(resource, group)} "{name}" already exists', details))


def conflict(resource: str, group: str, name: str, why: str) -> ApiError:
    # errors.go NewConflict: `Operation cannot be fulfilled on %s %q: %v`
    details = {"name": name, "kind": resource, **({"group": group} if group else {})}
    return ApiError(
        status(
            409, "Conflict", f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}', details
        )
    )


#: staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go: OptimisticLockErrorMsg
OPTIMISTIC_LOCK = "the object has been modified; please apply your changes to the latest version and try again"


def bad_request(message: str) -> ApiError:
    return ApiError(status(400, "BadRequest", message))


def forbidden(resource: str, group: str, name: str, why: str) -> ApiError:
    # errors.go NewForbidden: `%s %q is forbidden: %v` (name empty: `%s is forbidden: %v`)
    target = f'{_qualified(resource, group)} "{name}"' if name else _qualified(resource, group)
    details = {"name": name, "kind": resource, **({"group": group} if group else {})}
    return ApiError(status(403, "Forbidden", f"{target} is forbidden: {why}", details))


def forbidden_path(user: str, path: str, verb: str = "get") -> ApiError:
    # responsewriters/errors.go Forbidden for a request without a resource: `forbidden: User %q
    # cannot %s path %q`, details empty
    return ApiError(status(403, "Forbidden", f'forbidden: User "{user}" cannot {verb} path "{path}"', {}))


def expired(message: str) -> ApiError:
    # errors.go NewResourceExpired: 410 with reason Expired
    return ApiError(status(410, "Expired", message))


def too_many_requests(retry_after: int = 1) -> ApiError:
    # staging/src/k8s.io/apiserver/pkg/server/filters/maxinflight.go tooManyRequests:
    # `Retry-After: 1` and this message
    return ApiError(
        status(
            429, "TooManyRequests", "Too many requests, please try again later.", {"retryAfterSeconds": retry_after}
        ),
        {"Retry-After": str(retry_after)},
    )


@dataclass
class FieldError:
    """field.Error: a type (`FieldValueRequired`, ...), the field path, the bad value, a detail."""

    type: str
    field: str
    value: Any = None
    detail: str = ""
    supported: tuple[str, ...] = ()

    def body(self) -> str:
        """field.Error.ErrorBody()."""
        if self.type == "FieldValueRequired":
            text = "Required value"
        elif self.type == "FieldValueForbidden":
            text = "Forbidden"
        elif self.type == "FieldValueDuplicate":
            text = f"Duplicate value: {_show(self.value)}"
        elif self.type == "FieldValueNotSupported":
            text = f"Unsupported value: {_show(self.value)}"
            if self.supported:
                text += ": supported values: " + ", ".join(f'"{s}"' for s in self.supported)
            return text
        elif self.type == "FieldValueTooLong":
            text = "Too long"
        elif self.type == "FieldValueTooMany":
            text = "Too many"
        else:  # FieldValueInvalid, FieldValueTypeInvalid
            text = f"Invalid value: {_show(self.value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def _show(value: Any) -> str:
    # field/errors.go ErrorBody: strings quoted (%q), numbers and bools as they are, else JSON
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def required(path: str, detail: str = "") -> FieldError:
    return FieldError("FieldValueRequired", path, detail=detail)


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError("FieldValueInvalid", path, value, detail)


def not_supported(path: str, value: Any, supported: tuple[str, ...]) -> FieldError:
    return FieldError("FieldValueNotSupported", path, value, supported=supported)


def invalid_object(kind: str, group: str, name: str, errs: list[FieldError]) -> ApiError:
    """errors.go NewInvalid: `<Kind>[.<group>] "<name>" is invalid: <aggregate>`; one cause per
    field error (`reason` is the type, `message` the body, `field` the path). The aggregate of
    one error is that error; of several, `[a, b]` (utilerrors.aggregate.Error)."""
    aggregate = str(errs[0]) if len(errs) == 1 else "[" + ", ".join(str(e) for e in errs) + "]"
    details: dict[str, Any] = {"name": name, "kind": kind}
    if group:
        details["group"] = group
    details["causes"] = [{"reason": e.type, "message": e.body(), "field": e.field} for e in errs]
    return ApiError(status(422, "Invalid", f'{_qualified(kind, group)} "{name}" is invalid: {aggregate}', details))
