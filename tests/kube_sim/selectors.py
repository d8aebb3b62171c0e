"""Label and field selectors as the API server parses them.

kubernetes v1.33.0 staging/src/k8s.io/apimachinery/pkg/labels/selector.go: `k=v`, `k==v`,
`k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, comma = AND. `!=` and `notin` match objects
without the label. staging/src/k8s.io/apimachinery/pkg/fields/selector.go: `=`, `==`, `!=` on
the fields a kind supports (pkg/registry/core/pod/strategy.go ToSelectableFields for pods).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .errors import bad_request

Matcher = Callable[[dict[str, Any]], bool]

_TERMS = re.compile(r"\s*([^,(]+(?:\([^)]*\))?)\s*(?:,|$)")


def _terms(text: str) -> list[str]:
    return [t.strip() for t in _TERMS.findall(text) if t.strip()]


def label_matcher(text: str | None) -> Matcher:
    if not text:
        return lambda labels: True
    checks: list[Matcher] = []
    for term in _terms(text):
        match = re.fullmatch(r"([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)", term)
        if match:
            name, op, values = match.group(1), match.group(2), {v.strip() for v in match.group(3).split(",")}
            if op == "in":
                checks.append(lambda labels, n=name, vs=values: labels.get(n) in vs)
            else:
                checks.append(lambda labels, n=name, vs=values: labels.get(n) not in vs)
            continue
        match = re.fullmatch(r"([^\s!=]+)\s*(==|=|!=)\s*([^\s]*)", term)
        if match:
            name, op, value = match.groups()
            if op == "!=":
                checks.append(lambda labels, n=name, v=value: labels.get(n) != v)
            else:
                checks.append(lambda labels, n=name, v=value: labels.get(n) == v)
            continue
        match = re.fullmatch(r"(!?)\s*([^\s!=()]+)", term)
        if not match:
            raise bad_request(f"unable to parse requirement: found '{term}', expected: in, notin, =, ==, !=, gt, lt")
        negated, label = match.group(1), match.group(2)
        if negated:
            checks.append(lambda labels, n=label: n not in labels)
        else:
            checks.append(lambda labels, n=label: n in labels)
    return lambda labels: all(check(labels) for check in checks)


#: Fields each kind lets a selector name, beyond metadata.name and metadata.namespace.
# pkg/registry/core/pod/strategy.go PodToSelectableFields; pkg/registry/core/event/strategy.go.
SELECTABLE = {
    "pods": (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
        "spec.hostNetwork",
    ),
    "events": (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
        "regarding.kind",
        "regarding.name",
        "regarding.namespace",
        "regarding.uid",
    ),
    "namespaces": ("status.phase",),
    "secrets": ("type",),
}


def _lookup(obj: dict[str, Any], path: str) -> str:
    node: Any = obj
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def field_matcher(text: str | None, plural: str) -> Matcher:
    if not text:
        return lambda obj: True
    allowed = ("metadata.name", "metadata.namespace", *SELECTABLE.get(plural, ()))
    checks: list[Matcher] = []
    for term in _terms(text):
        match = re.fullmatch(r"([^\s!=]+)\s*(==|=|!=)\s*(.*)", term)
        if not match:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        name, op, value = match.groups()
        if name not in allowed:
            # staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go: the conversion
            # func's error: `field label not supported: %s`
            raise bad_request(f'"{name}" is not a known field selector: only "{", ".join(allowed)}"')
        if op == "!=":
            checks.append(lambda obj, n=name, v=value: _lookup(obj, n) != v)
        else:
            checks.append(lambda obj, n=name, v=value: _lookup(obj, n) == v)
    return lambda obj: all(check(obj) for check in checks)
