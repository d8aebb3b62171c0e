"""The params of a run, and the ones that differ between runs.

A run's params are what its training code logged (`tracking.log_params`, per replica under
`params/`; the chief's win, other replicas fill in names it did not log) and its topology, flattened
to dotted paths under `topology.` (`topology.environment.replicas.n_workers`), plus its backend.
Comparing twenty runs, the columns worth a look are the few whose values differ; the many that
are the same in every run are hidden unless asked for (`all_params=True`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["flatten", "run_params", "canonical", "differing", "chief_first"]

#: Replica keys in the order their values win: the one that reports for the job first.
CHIEF_ORDER = ("master-0", "chief-0", "worker-0")


def chief_first(replicas: Iterable[str]) -> list[str]:
    """Replica keys, the chief's first (master, chief, worker 0), then the others sorted."""
    replicas = sorted(replicas)
    first = [key for key in CHIEF_ORDER if key in replicas]
    return first + [key for key in replicas if key not in first]


def flatten(value: Any, prefix: str) -> dict[str, Any]:
    """Leaves of nested dicts under dotted paths; a list is one value (its JSON)."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, (list, tuple)):
        return {prefix: json.dumps(value, sort_keys=True, default=str)}
    return {prefix: value}


def run_params(logged: Mapping[str, Mapping[str, Any]], topology: Mapping[str, Any], backend: str) -> dict[str, Any]:
    """One run's params: logged ones by name (the chief's first), then `backend` and `topology.*`."""
    out: dict[str, Any] = {}
    for replica in reversed(chief_first(logged)):  # the chief's values written last, so they win
        for name, value in logged[replica].items():
            out[str(name)] = value if isinstance(value, (str, int, float, bool, type(None))) else json.dumps(value)
    out["backend"] = backend
    out.update(flatten(dict(topology), "topology"))
    return out


def canonical(value: Any) -> str:
    """A value's identity for "the same in every run": JSON, with 1.0 and 1 the same number."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return json.dumps(value, sort_keys=True, default=str)


def differing(params: Iterable[Mapping[str, Any]], encoded: bool = False) -> list[str]:
    """Param names whose values are not the same in every run (absent in some counts as
    different), logged params first, then the topology's; sorted within each. `encoded`: the
    values are `canonical` already (a digest's `canonical_params`)."""
    runs = list(params)
    same = str if encoded else canonical
    names = sorted({name for run in runs for name in run}, key=lambda name: (name.startswith("topology."), name))
    missing = object()
    out = []
    for name in names:
        seen = {same(run[name]) if name in run else repr(missing) for run in runs}
        if len(seen) > 1:
            out.append(name)
    return out
