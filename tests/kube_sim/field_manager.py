"""Server-side apply and managed fields (`kubectl apply --server-side`, which the README advises for
code over 256 KiB).

After kubernetes v1.33.0 staging/src/k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager and
sigs.k8s.io/structured-merge-diff v4 (merge/update.go Apply and Update, fieldpath/serialize.go):
- a PATCH of type `application/apply-patch+yaml` (YAML or JSON) with `fieldManager` creates the
  object when it does not exist, else merges the applied configuration into it: maps field by
  field, associative lists (containers, env, ports, volumes, volumeMounts... the
  `x-kubernetes-list-map-keys` / patch merge keys of the schema) item by item by their keys, other
  lists and scalars whole;
- each manager's fields are recorded in `metadata.managedFields` (`operation: Apply` for an apply,
  `Update` for other writes, `fieldsType: FieldsV1`: `f:<field>`, `k:{"name":"x"}` for an item of
  an associative list, `.` for the item itself);
- a field set by the apply whose value another manager owns with a different value is a 409
  Conflict (`Apply failed with N conflict(s): conflict with "<manager>"[ using <version>]: .spec.x`,
  each a `FieldManagerConflict` cause), unless `force=true`, which takes the field over;
- a field this manager applied before and no longer applies is removed, unless another manager
  owns it too.
Writes by the simulated controllers (in-process) record nothing, as the tests never compare them.
"""

from __future__ import annotations

import json
from typing import Any

from . import errors
from .clone import clone
from .errors import ApiError

Obj = dict[str, Any]
Path = tuple[str, ...]

#: associative lists and their keys (the patch merge keys / x-kubernetes-list-map-keys of the core
#: types: pkg/apis/core/v1 types.go `patchMergeKey`), by field name
LIST_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "env": ("name",),
    "volumes": ("name",),
    "volumeMounts": ("mountPath",),
    "ports": ("containerPort", "protocol"),
    "imagePullSecrets": ("name",),
    "tolerations": (),
    "conditions": ("type",),
    "ownerReferences": ("uid",),
}
IGNORED = {
    ("metadata", "managedFields"), ("metadata", "resourceVersion"), ("metadata", "uid"),
    ("metadata", "creationTimestamp"), ("metadata", "generation"), ("status",), ("apiVersion",), ("kind",),
}  # fmt: skip


def _item_key(field: str, item: Any) -> str | None:
    keys = LIST_KEYS.get(field)
    if not keys or not isinstance(item, dict):
        return None
    present = {k: item[k] for k in keys if k in item}
    if field == "ports":
        present.setdefault("protocol", "TCP")
    if not present:
        return None
    return "k:" + json.dumps(present, sort_keys=True, separators=(",", ":"))


def leaves(obj: Any, prefix: Path = ()) -> dict[Path, Any]:
    """Every owned path of an object and its value: map fields as `f:<name>`, associative list items
    as `k:{...}` (with `.` for the item), other lists and scalars as leaves."""
    out: dict[Path, Any] = {}
    if isinstance(obj, dict):
        for name, value in obj.items():
            path = (*prefix, f"f:{name}")
            if tuple(p[2:] for p in path) in IGNORED or (len(path) == 1 and name in ("apiVersion", "kind", "status")):
                continue
            if isinstance(value, dict) and value:
                out.update(leaves(value, path))
            elif isinstance(value, list) and value and all(_item_key(name, i) for i in value):
                for item in value:
                    item_path = (*path, _item_key(name, item) or "")
                    out[(*item_path, ".")] = None
                    out.update(leaves(item, item_path))
            else:
                out[path] = value
    return out


def _get(obj: Any, path: Path) -> Any:
    current = obj
    for part in path:
        if part == ".":
            return current
        if part.startswith("f:"):
            if not isinstance(current, dict) or part[2:] not in current:
                return _MISSING
            current = current[part[2:]]
        elif part.startswith("k:"):
            wanted = json.loads(part[2:])
            found = [i for i in current or [] if isinstance(i, dict) and _has_keys(i, wanted)]
            if not found:
                return _MISSING
            current = found[0]
    return current


_MISSING = object()


def _has_keys(item: Obj, wanted: Obj) -> bool:
    return all(item.get(k, "TCP" if k == "protocol" else None) == v for k, v in wanted.items())


def to_fields_v1(paths: set[Path]) -> Obj:
    out: Obj = {}
    for path in sorted(paths):
        node = out
        for part in path:
            node = node.setdefault(part, {})
    return out


def from_fields_v1(fields: Obj, prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    for part, sub in (fields or {}).items():
        path = (*prefix, part)
        if sub:
            out |= from_fields_v1(sub, path)
        else:
            out.add(path)
    return out


def merge(live: Any, applied: Any, field: str = "") -> Any:
    """The applied configuration over the live object (structured merge)."""
    if isinstance(live, dict) and isinstance(applied, dict):
        out = clone(live)
        for name, value in applied.items():
            out[name] = merge(live.get(name), value, name) if name in live else clone(value)
        return out
    if (
        isinstance(live, list)
        and isinstance(applied, list)
        and applied
        and all(_item_key(field, i) for i in applied + live)
    ):
        merged = [clone(i) for i in live]
        for item in applied:
            key = _item_key(field, item)
            for i, existing in enumerate(merged):
                if _item_key(field, existing) == key:
                    merged[i] = merge(existing, item, "")
                    break
            else:
                merged.append(clone(item))
        return merged
    return clone(applied)


def _remove(obj: Any, path: Path) -> None:
    """Remove the field (or list item) at `path` from `obj`, in place."""
    if not path:
        return
    parent_path, last = path[:-1], path[-1]
    if last == ".":
        parent_path, last = path[:-2], path[-2]
    parent = _get(obj, parent_path) if parent_path else obj
    if parent is _MISSING:
        return
    if last.startswith("f:") and isinstance(parent, dict):
        parent.pop(last[2:], None)
    elif last.startswith("k:") and isinstance(parent, list):
        wanted = json.loads(last[2:])
        parent[:] = [
            i for i in parent if not all(i.get(k, "TCP" if k == "protocol" else None) == v for k, v in wanted.items())
        ]


def _entries(obj: Obj) -> list[Obj]:
    return list((obj.get("metadata") or {}).get("managedFields") or [])


def _owned(entry: Obj) -> set[Path]:
    return from_fields_v1(entry.get("fieldsV1") or {})


def record_update(obj: Obj, old: Obj | None, manager: str, api_version: str, stamp: str) -> None:
    """An ordinary write (create, update, patch) by `manager`: it now owns the fields it changed
    (all of them on create); others lose those."""
    new_leaves = leaves(obj)
    old_leaves = leaves(old) if old else {}
    changed = {p for p, v in new_leaves.items() if p not in old_leaves or old_leaves[p] != v}
    entries = _entries(old) if old else []
    kept: list[Obj] = []
    mine: set[Path] = set()
    for entry in entries:
        owned = _owned(entry) & set(new_leaves)
        if entry.get("manager") == manager and entry.get("operation") == "Update":
            mine |= owned
            continue
        owned -= changed
        if owned:
            kept.append({**entry, "fieldsV1": to_fields_v1(owned)})
    mine |= changed
    if mine:
        kept.append(_entry(manager, "Update", api_version, stamp, mine))
    obj.setdefault("metadata", {})["managedFields"] = kept


def _entry(manager: str, operation: str, api_version: str, stamp: str, paths: set[Path]) -> Obj:
    return {"manager": manager, "operation": operation, "apiVersion": api_version, "time": stamp,
            "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(paths)}  # fmt: skip


def apply(live: Obj | None, applied: Obj, manager: str, force: bool, api_version: str, stamp: str) -> Obj:
    """The object after `manager` applies `applied` (structured-merge-diff merge/update.go Apply);
    ApiError 409 on conflicts unless `force`."""
    applied_leaves = leaves(applied)
    if live is None:
        obj = clone(applied)
        obj.setdefault("metadata", {})["managedFields"] = [
            _entry(manager, "Apply", api_version, stamp, set(applied_leaves))
        ]
        return obj
    live_leaves = leaves(live)
    entries = _entries(live)
    conflicts: list[tuple[str, str, Path]] = []
    for entry in entries:
        if entry.get("manager") == manager and entry.get("operation") == "Apply":
            continue
        for path in _owned(entry) & set(applied_leaves):
            if path[-1] == ".":
                continue
            if path in live_leaves and live_leaves[path] != applied_leaves[path]:
                conflicts.append((entry.get("manager", ""), entry.get("apiVersion", ""), path))
    if conflicts and not force:
        raise _conflict(conflicts)
    previous = next(
        (_owned(e) for e in entries if e.get("manager") == manager and e.get("operation") == "Apply"), set()
    )
    others = (
        set().union(
            *[_owned(e) for e in entries if not (e.get("manager") == manager and e.get("operation") == "Apply")]
        )
        if entries
        else set()
    )
    obj = merge(live, applied)
    for path in sorted(previous - set(applied_leaves) - others, key=len, reverse=True):
        _remove(obj, path)
    taken = {p for _, _, p in conflicts}
    kept = []
    for entry in entries:
        if entry.get("manager") == manager and entry.get("operation") == "Apply":
            continue
        owned = _owned(entry) - taken
        if owned:
            kept.append({**entry, "fieldsV1": to_fields_v1(owned)})
    kept.append(_entry(manager, "Apply", api_version, stamp, set(applied_leaves)))
    obj["metadata"]["managedFields"] = kept
    return obj


def _dotted(path: Path) -> str:
    out = ""
    for part in path:
        if part.startswith("f:"):
            out += "." + part[2:]
        elif part.startswith("k:"):
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in json.loads(part[2:]).items()) + "]"
    return out


def _conflict(conflicts: list[tuple[str, str, Path]]) -> ApiError:
    """fieldmanager/internal/conflict.go NewConflictError."""
    causes = [
        {"reason": "FieldManagerConflict", "message": f'conflict with "{m}"' + (f" using {v}" if v else ""),
         "field": _dotted(p)}
        for m, v, p in sorted(conflicts)
    ]  # fmt: skip
    if len(causes) == 1:
        message = f"Apply failed with 1 conflict: {causes[0]['message']}: {causes[0]['field']}"
    else:
        lines = "\n".join(f"* {c['message']}: {c['field']}" for c in causes)
        message = f"Apply failed with {len(causes)} conflicts: {lines}"
    return ApiError(errors.status(409, "Conflict", message, {"causes": causes}))


def manager_of(query: dict[str, str], user_agent: str) -> str:
    """The request's fieldManager, else the user agent's first word (handlers/rest.go
    prefixFromUserAgent)."""
    if query.get("fieldManager"):
        return query["fieldManager"]
    return (user_agent or "unknown").split("/")[0][:128]
