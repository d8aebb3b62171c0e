"""A sweep section's early stopping (v0 `early_stopping`, v1 `earlyStopping`).

Each entry is Polyaxon's: `{metric, value, optimization, policy}` (v1 adds `kind:
metric_early_stopping`), or v1's `{kind: failure_early_stopping, percent}`. An entry with a
`value` stops the whole sweep once a finished trial reaches it; its `policy` (median,
truncation) prunes trials while they run, each onto an Optuna pruner (see `engine.py`). An entry
without a value only names the metric a policy prunes by: the objective, when nothing else
names one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ...topology.errors import Problem, show_value
from .fields import Fields
from .models import MAX_TRIALS, Objective, Pruning, StopRule


@dataclass
class Stopping:
    """What the early-stopping entries say."""

    rules: list[StopRule] = field(default_factory=list)
    policy: Pruning | None = None
    failure_percent: float | None = None
    policy_metric: Objective | None = None  # the metric of the first entry with a policy and no value


def read_early_stopping(fields: Fields) -> Stopping:
    out = Stopping()
    written, entries = fields.get(fields.raw, "early_stopping")
    if written is None:
        return out
    problems = fields.problems
    path = f"{fields.key}.{written}"
    if not isinstance(entries, list):
        problems.append(Problem(path, f"{show_value(entries)} is not a list of early-stopping rules"))
        return out
    for i, entry in enumerate(entries):
        where = f"{path}[{i}]"
        if not isinstance(entry, dict):
            problems.append(Problem(where, f"{show_value(entry)} is not a mapping"))
            continue
        kind = entry.get("kind", "metric_early_stopping")
        if kind == "failure_early_stopping":
            fields.unknown(entry, where, {"kind", "percent"})
            percent = entry.get("percent")
            if isinstance(percent, bool) or not isinstance(percent, (int, float)) or not 0 < percent <= 100:
                problems.append(Problem(f"{where}.percent", f"{show_value(percent)} is not a percentage in (0, 100]"))
            else:
                out.failure_percent = float(percent)
            continue
        if kind != "metric_early_stopping":
            problems.append(
                Problem(f"{where}.kind", f"{show_value(kind)} is not metric_early_stopping or failure_early_stopping")
            )
            continue
        fields.unknown(entry, where, {"kind", "metric", "value", "optimization", "policy"})
        metric = entry.get("metric")
        if not isinstance(metric, str) or not metric:
            problems.append(Problem(f"{where}.metric", f"{show_value(metric)} is not a metric name"))
            continue
        direction = fields.direction(entry.get("optimization", "maximize"), f"{where}.optimization")
        value = entry.get("value")
        if direction and value is not None:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                problems.append(Problem(f"{where}.value", f"{show_value(value)} is not a finite number"))
            else:
                out.rules.append(StopRule(metric=metric, value=value, direction=direction))
        elif direction and "policy" in entry and out.policy_metric is None:
            out.policy_metric = Objective(name=metric, direction=direction)
        if "policy" in entry:
            out.policy = read_policy(fields, entry["policy"], f"{where}.policy") or out.policy
    return out


def read_policy(fields: Fields, raw: Any, path: str) -> Pruning | None:
    if not isinstance(raw, dict) or raw.get("kind") not in ("median", "truncation"):
        kind = raw.get("kind") if isinstance(raw, dict) else raw
        fields.problems.append(
            Problem(
                f"{path}.kind" if isinstance(raw, dict) else path,
                f"{show_value(kind)} is not median or truncation (the stopping policies Optuna has a pruner for)",
            )
        )
        return None
    fields.unknown(
        raw, path, {"kind", "evaluation_interval", "min_interval", "min_samples", "percent", "include_succeeded"}
    )
    interval = fields.whole(fields.get(raw, "evaluation_interval")[1] or 1, f"{path}.evaluationInterval", 1, 10**9)
    warmup = fields.whole(fields.get(raw, "min_interval")[1] or 0, f"{path}.minInterval", 0, 10**9)
    samples = fields.whole(fields.get(raw, "min_samples")[1] or 1, f"{path}.minSamples", 1, MAX_TRIALS)
    percent = None
    if raw["kind"] == "truncation":
        percent = raw.get("percent")
        if isinstance(percent, bool) or not isinstance(percent, (int, float)) or not 0 < percent < 100:
            fields.problems.append(Problem(f"{path}.percent", f"{show_value(percent)} is not a percentage in (0, 100)"))
            return None
    if interval is None or warmup is None or samples is None:
        return None
    return Pruning(
        kind=raw["kind"],
        interval_steps=interval,
        warmup_steps=warmup,
        min_trials=samples,
        percentile=None if percent is None else 100.0 - float(percent),
    )
