"""Authorization of the HTTP API's requests: what a user may do, asked by SelfSubjectAccessReview
and enforced on every call (the simulated controllers call the registry directly, as the real ones
hold their own rights, and are never refused).

Everything is allowed except what a test denies: `deny(verb, resource, group, namespace)` takes
away a right as removing an RBAC rule would. A denial matches as an RBAC PolicyRule does
(kubernetes v1.33.0 pkg/apis/rbac/v1/evaluation_helpers.go VerbMatches, APIGroupMatches,
ResourceMatches: `*` matches anything, a subresource is named `<resource>/<subresource>` and
`*/<subresource>` matches it on any resource), plus the namespace (`*`: every namespace).

- A request's attributes (kubernetes v1.33.0 staging/src/k8s.io/apiserver/pkg/endpoints/request/
  requestinfo.go): GET of a name is `get`, of a collection `list`, with `watch=true` `watch`; POST
  `create`, PUT `update`, PATCH `patch`, DELETE of a name `delete`, of a collection
  `deletecollection`; `pods/<name>/log` is resource `pods`, subresource `log`.
- A refused call: 403 Forbidden (apiserver pkg/endpoints/handlers/responsewriters/errors.go
  Forbidden + forbiddenMessage, apimachinery pkg/api/errors NewForbidden):
  `pods is forbidden: User "tester" cannot list resource "pods" in API group "" in the namespace "ml"`.
- A SelfSubjectAccessReview (pkg/registry/authorization/selfsubjectaccessreview/rest.go) answers
  `allowed` from the same rules; RBAC has no opinion on what no rule allows (plugin/pkg/auth/
  authorizer/rbac/rbac.go Authorize: DecisionNoOpinion), so a refusal is `allowed: false` with
  `denied` unset and an empty reason.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from . import errors
from .query_params import query_flag

#: The user named by the simulated cluster's kubeconfig (its token authenticates as this user).
USER = "tester"


@dataclass(frozen=True)
class Attributes:
    """authorizer.Attributes of a resource request."""

    verb: str
    group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    @property
    def combined(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


@dataclass(frozen=True)
class Denial:
    verb: str
    group: str
    resource: str
    namespace: str

    def matches(self, attrs: Attributes) -> bool:
        if self.verb not in ("*", attrs.verb) or self.group not in ("*", attrs.group):
            return False
        if self.namespace not in ("*", attrs.namespace):
            return False
        if self.resource in ("*", attrs.combined):
            return True
        # evaluation_helpers.go ResourceMatches: "*/status" matches every resource's status
        return bool(attrs.subresource) and self.resource == f"*/{attrs.subresource}"


def request_attributes(
    method: str, group: str, resource: str, namespace: str, name: str | None, sub: str, query: dict[str, str]
) -> Attributes:
    """requestinfo.go: the verb of an HTTP request on a resource."""
    if method == "GET":
        verb = "get" if name else ("watch" if query_flag(query.get("watch")) else "list")
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())
    return Attributes(verb, group, resource, sub, namespace, name or "")


def forbidden_message(attrs: Attributes, user: str = USER) -> str:
    """responsewriters/errors.go forbiddenMessage."""
    scope = f"in the namespace {_q(attrs.namespace)}" if attrs.namespace else "at the cluster scope"
    return f"User {_q(user)} cannot {attrs.verb} resource {_q(attrs.combined)} in API group {_q(attrs.group)} {scope}"


def _q(text: str) -> str:
    """Go's %q for the plain strings of names."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Authorizer:
    def __init__(self, user: str = USER):
        self.user = user
        self._denials: list[Denial] = []
        self._lock = threading.Lock()

    def deny(self, verb: str, resource: str, group: str = "*", namespace: str = "*") -> None:
        """Take away `verb` on `resource` (`pods`, `pods/log`, `*`) of `group` (`""`: the core
        group, `*`: any) in `namespace` (`*`: any)."""
        with self._lock:
            self._denials.append(Denial(verb, group, resource, namespace))

    def allow_all(self) -> None:
        with self._lock:
            self._denials.clear()

    def allowed(self, attrs: Attributes) -> bool:
        with self._lock:
            return not any(d.matches(attrs) for d in self._denials)

    def authorize(self, attrs: Attributes) -> None:
        """ApiError 403 Forbidden when the user may not do this."""
        if self.allowed(attrs):
            return
        raise errors.forbidden(attrs.resource, attrs.group, attrs.name, forbidden_message(attrs, self.user))

    def review(self, body: dict[str, Any]) -> dict[str, Any]:
        """A SelfSubjectAccessReview, answered: the spec as sent, `status.allowed` from the rules
        (a review of a non-resource URL is allowed: nothing here denies one)."""
        spec = body.get("spec") or {}
        attrs = spec.get("resourceAttributes")
        allowed = True
        if attrs is not None:
            allowed = self.allowed(
                Attributes(
                    verb=attrs.get("verb") or "",
                    group=attrs.get("group") or "",
                    resource=attrs.get("resource") or "",
                    subresource=attrs.get("subresource") or "",
                    namespace=attrs.get("namespace") or "",
                    name=attrs.get("name") or "",
                )
            )
        return {
            "kind": "SelfSubjectAccessReview",
            "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": None, **(body.get("metadata") or {})},
            "spec": spec,
            "status": {"allowed": allowed},
        }
