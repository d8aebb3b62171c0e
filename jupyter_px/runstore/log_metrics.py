"""Metrics that travel in a replica's log stream, for backends without a shared disk.

On Kubernetes a replica cannot append to the run store's files, so `jupyter_px.tracking` prints
each call as one `@px-metrics {json}` (or `@px-params {json}`) line, and the runner its failure
record as one `@px-failure {json}` line (`code/source_map.keep_failure`). The backend that
streams the logs passes the lines here; afterwards `MetricsReader` sees those points like any
others, and the failure record is where the run directory keeps it (`failures/`). A group that
torchrun's elastic agents formed says its start in an `@px-round {json}` line (its rank 0, in
whichever pod: `runner._say_round`), appended to the run's `rounds.jsonl`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .files import atomic_write_json
from .layout import (
    FAILURE_LOG_PREFIX,
    FAILURES_DIR,
    METRICS_LOG_PREFIX,
    PARAMS_LOG_PREFIX,
    ROUND_LOG_PREFIX,
    RunPaths,
)

__all__ = ["LogMetrics", "parse_log_metrics", "ingest_log_lines"]


@dataclass
class LogMetrics:
    """What `parse_log_metrics` found: JSONL-ready metric records and the merged params."""

    metrics: list[dict[str, Any]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    #: the last failure record among the lines (a replica fails once per attempt)
    failure: dict[str, Any] | None = None
    #: the starts of groups torchrun formed (`{"time", "nodes", "world"}`), in log order
    rounds: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0  # marker lines whose JSON was unusable


def _metric_record(obj: Any) -> dict[str, Any] | None:
    """Validate one `@px-metrics` object; the normalised record or None."""
    if not isinstance(obj, dict) or not isinstance(obj.get("metrics"), dict):
        return None
    when, step, total = obj.get("time"), obj.get("step"), obj.get("total_steps")
    if not isinstance(when, (int, float)) or not (step is None or isinstance(step, int)):
        return None
    values = {
        str(k): float(v) for k, v in obj["metrics"].items() if isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    if not values:
        return None
    record: dict[str, Any] = {"step": step, "time": float(when), "metrics": values}
    if isinstance(total, int):
        record["total_steps"] = total
    return record


def _round_record(obj: dict[str, Any]) -> bool:
    """Whether one `@px-round` object says a group's start: a time, and its nodes and world counted."""
    counts = [obj.get("nodes"), obj.get("world")]
    when = obj.get("time")
    whole = all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in counts)
    return whole and isinstance(when, (int, float)) and not isinstance(when, bool)


def parse_log_metrics(lines: Iterable[str | bytes]) -> LogMetrics:
    """Pick `@px-metrics {json}`, `@px-params {json}`, `@px-failure {json}` and `@px-round {json}`
    lines out of a replica's log.

    The marker may follow other text on the line (a log timestamp, or output the training
    code printed without a newline); the JSON runs from the marker to the end of the line.
    """
    found = LogMetrics()
    for line in lines:
        if isinstance(line, bytes):
            line = line.decode("utf-8", "replace")
        for marker in (METRICS_LOG_PREFIX, PARAMS_LOG_PREFIX, FAILURE_LOG_PREFIX, ROUND_LOG_PREFIX):
            at = line.find(marker)
            if at < 0:
                continue
            try:
                obj = json.loads(line[at + len(marker) :])
            except ValueError:
                found.skipped += 1
                break
            if marker is METRICS_LOG_PREFIX:
                record = _metric_record(obj)
                if record is None:
                    found.skipped += 1
                else:
                    found.metrics.append(record)
            elif not isinstance(obj, dict):
                found.skipped += 1
            elif marker is FAILURE_LOG_PREFIX:
                found.failure = obj
            elif marker is ROUND_LOG_PREFIX:
                if _round_record(obj):
                    found.rounds.append(obj)
                else:
                    found.skipped += 1
            else:
                found.params.update(obj)
            break
    return found


def ingest_log_lines(run_paths: RunPaths, role: str, index: int, lines: Iterable[str | bytes]) -> LogMetrics:
    """Store the metrics and params found in log lines as if the replica had written them.

    For backends without a shared disk: after this, `MetricsReader` sees them like any others.
    The caller passes each log line once (keep your own log offset).
    """
    found = parse_log_metrics(lines)
    if found.metrics:
        path = run_paths.metrics(role, index)
        path.parent.mkdir(parents=True, exist_ok=True)
        blob = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in found.metrics)
        with open(path, "a", encoding="utf-8") as f:
            f.write(blob)
    if found.params:
        path = run_paths.params(role, index)
        merged: dict[str, Any] = {}
        try:
            merged = json.loads(path.read_text())
        except (FileNotFoundError, ValueError):
            pass
        merged.update(found.params)
        atomic_write_json(path, merged)
    if found.failure is not None:
        atomic_write_json(run_paths.root / FAILURES_DIR / f"{role}-{index}.json", found.failure)
    if found.rounds:
        with open(run_paths.rounds, "a", encoding="utf-8") as f:
            f.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in found.rounds))
    return found
