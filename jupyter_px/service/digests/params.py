"""The params of a run, and the ones that differ between runs.

A run's params are its sweep trial's values (`lr`, as the sweep named them), what its training code
logged (`tracking.log_params`, per replica under `params/`; the chief's win, other replicas fill in
names it did not log) and its topology, flattened to dotted paths under `topology.`
(`topology.environment.replicas.n_workers`), plus its backend. The trial's values also travel in
the topology as `PX_PARAMS` (JSON in the replicas' environment): that one is read as its values, a
column per name, never as one column of JSON.
Comparing twenty runs, the columns worth a look are the few whose values differ; the many that
are the same in every run are hidden unless asked for (`all_params=True`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["flatten", "run_params", "trial_values", "canonical", "differing", "chief_first"]

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


#: Where a sweep trial's values sit in its topology (`environment.env.PX_PARAMS`, JSON).
TRIAL_ENV = "PX_PARAMS"


def _plain(value: Any) -> Any:
    """A param as the table shows it; a non-finite number as its text (`inf`, `nan`: JSON has no
    such number, and null would say it was never logged)."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value if isinstance(value, (str, int, float, bool, type(None))) else json.dumps(value, sort_keys=True)


def trial_values(topology: Mapping[str, Any]) -> dict[str, Any]:
    """A sweep trial's values from its topology's `PX_PARAMS` (empty when there are none)."""
    env = ((topology.get("environment") or {}).get("env") or {}) if isinstance(topology, Mapping) else {}
    text = env.get(TRIAL_ENV) if isinstance(env, Mapping) else None
    try:
        values = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return {}
    return dict(values) if isinstance(values, dict) else {}


def run_params(
    logged: Mapping[str, Mapping[str, Any]],
    topology: Mapping[str, Any],
    backend: str,
    trial: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One run's params: the sweep trial's values (`trial`, else the topology's `PX_PARAMS`), the
    logged ones by name (the chief's first), then `backend` and `topology.*` (without PX_PARAMS)."""
    out: dict[str, Any] = {str(name): _plain(value) for name, value in (trial or trial_values(topology)).items()}
    for replica in reversed(chief_first(logged)):  # the chief's values written last, so they win
        for name, value in logged[replica].items():
            out[str(name)] = _plain(value)
    out["backend"] = backend
    flat = flatten(dict(topology), "topology")  # PX_PARAMS also sits in each role's own env
    out.update({key: value for key, value in flat.items() if not key.endswith(f".env.{TRIAL_ENV}")})
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
