"""What changed since the previous run of the same notebook cell: code, params, metrics.

A data scientist re-runs a cell after changing a learning rate or a line of the model, and asks
"better or worse than last time, and what did I change?". The answer is a comparison of two runs,
so it lives here: the run submitted before this one from the same cell (its code's origin is
`cell:<cell id>`, recorded by `%%px_distributed`: JupyterLab and nbclient send each cell's id with
its execution), the code as a unified diff, the params that differ (`params.run_params`: the
sweep's values, logged params, the topology), and each metric's value now against the previous
run's final one, with which way is better (`values.optimization_for`).

The previous run is read through the digest cache (read once, kept on disk when finished), so a
view polled every second costs a dictionary lookup for it; the current run's latest values come
from the reader its view already keeps.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from ..presentation.view_models import CellChanges, MetricChange, ParamChange
from ..runstore import RunDamaged, RunNotFound, RunRecord
from ..runstore.layout import logged_by_the_code
from ..service import RunService
from ..service.digests.params import canonical, chief_first, run_params
from ..service.digests.values import optimization_for

__all__ = ["CELL_ORIGIN", "cell_of", "previous_run_of_cell", "cell_changes", "ChangesSince"]

#: A run's code origin when `%%px_distributed` knew the cell: `cell:<id>`.
CELL_ORIGIN = "cell:"
#: Lines of code diff kept (a whole rewrite is not read line by line).
MAX_DIFF_LINES = 200


def cell_of(record: RunRecord) -> str | None:
    """The notebook cell a run was submitted from, when it was recorded."""
    source = record.code.source or ""
    return source[len(CELL_ORIGIN) :] or None if source.startswith(CELL_ORIGIN) else None


def previous_run_of_cell(service: RunService, record: RunRecord) -> RunRecord | None:
    """The latest run submitted from the same cell before `record`'s (read through `service`, a
    `RunService`), or None."""
    cell = cell_of(record)
    if cell is None:
        return None
    best: RunRecord | None = None
    for other in service.records():
        earlier = other.run_id != record.run_id and cell_of(other) == cell and other.created_at < record.created_at
        if earlier and (best is None or other.created_at > best.created_at):
            best = other
    return best


def _shown(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else canonical(value)


def cell_changes(
    service: RunService,
    record: RunRecord,
    previous: RunRecord,
    latest: Mapping[str, float],
    logged: Mapping[str, Mapping[str, Any]],
) -> CellChanges:
    """This run (`record`, its metrics' `latest` values and `logged` params) against `previous`."""
    before = service.digests.digest(previous.run_id, cache_points())
    diff = list(
        difflib.unified_diff(
            service.code_text(previous.run_id).splitlines(),
            service.code_text(record.run_id).splitlines(),
            fromfile=previous.run_id,
            tofile=record.run_id,
            lineterm="",
        )
    )
    if len(diff) > MAX_DIFF_LINES:
        diff = diff[:MAX_DIFF_LINES] + [f"... {len(diff) - MAX_DIFF_LINES} more lines"]
    now = run_params(logged, record.topology, record.backend, record.sweep.params if record.sweep else None)
    params = []
    for name in sorted(set(now) | set(before.params), key=lambda n: (n.startswith("topology."), n)):
        old, new = before.params.get(name), now.get(name)
        if canonical(old) != canonical(new):
            params.append(ParamChange(name=name, before=_shown(old), after=_shown(new)))
    metrics = []
    for name in sorted(name for name in set(latest) | set(before.curves) if logged_by_the_code(name)):
        curve = before.curves.get(name)
        old = curve.summary.final if curve is not None else None
        new = latest.get(name)
        better = None
        if old is not None and new is not None and old != new:
            better = (new < old) if optimization_for(name) == "min" else (new > old)
        metrics.append(MetricChange(name=name, before=old, after=new, better=better))
    return CellChanges(
        previous_run=previous.run_id,
        previous_name=previous.name,
        previous_state=before.state,
        code_diff="\n".join(diff),
        params=params,
        metrics=metrics,
    )


def cache_points() -> int:
    """The digest size asked of the cache (the comparison's default: its digests are shared)."""
    from ..service.digests.downsample import DEFAULT_POINTS

    return DEFAULT_POINTS


class ChangesSince:
    """The `changes` callable a `presentation.run_view.RunViewSource` takes: finds the previous
    run of the cell once, then compares the reader's latest values against it at each view."""

    def __init__(self, service: RunService, record: RunRecord):
        self.service, self.record = service, record
        self.previous = previous_run_of_cell(service, record)

    def __call__(self, reader: Any) -> CellChanges | None:
        if self.previous is None:
            return None
        data = reader.data
        latest: dict[str, float] = {}
        for replica in reversed(chief_first(data)):  # the chief's values last, so they win
            for name, series in data[replica].items():
                if len(series):
                    latest[name] = float(series.values[-1])
        try:
            return cell_changes(self.service, self.record, self.previous, latest, reader.params())
        except (RunNotFound, RunDamaged, OSError):  # the previous run was deleted meanwhile
            return None
