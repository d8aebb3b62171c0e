"""A comparison of runs: per metric a downsampled curve per run and the best run; a table of
final and best values and the params that differ. Plain data, rendered by every surface (the
notebook's plotly figure and static SVG, the REST answer the sidebar draws).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..runstore import RunStore
from .digest import Curve, DigestCache, RunDigest
from .downsample import DEFAULT_POINTS, check_points
from .params import differing
from .values import Optimisation, check_optimisations, optimisation_for

__all__ = ["MetricComparison", "Comparison", "compare_runs", "encode"]


@dataclass(frozen=True)
class MetricComparison:
    name: str
    optimisation: Optimisation
    best_run: str | None  # the run whose best value is best; None when no run has a finite value
    curves: dict[str, Curve]  # run id -> its curve (runs without the metric are absent)


@dataclass(frozen=True)
class Comparison:
    runs: list[RunDigest]
    metrics: list[MetricComparison]
    params: list[str]  # the param columns shown: those that differ, or all
    points: int
    all_params: bool = False
    hidden_params: int = 0  # params left out because every run has the same value
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def run_ids(self) -> list[str]:
        return [run.run_id for run in self.runs]

    def metric(self, name: str) -> MetricComparison:
        for metric in self.metrics:
            if metric.name == name:
                return metric
        raise KeyError(f"no metric {name!r} in this comparison (it has: {', '.join(m.name for m in self.metrics)})")

    def rows(self) -> list[dict[str, Any]]:
        """One row per run: id, name, state, the shown params, and per metric final and best."""
        out = []
        for run in self.runs:
            final: dict[str, float | None] = {}
            best: dict[str, float | None] = {}
            best_step: dict[str, float | None] = {}
            for metric in self.metrics:
                curve = metric.curves.get(run.run_id)
                if curve is None:
                    continue
                final[metric.name] = curve.summary.final
                best[metric.name], best_step[metric.name] = curve.summary.best(metric.optimisation)
            out.append(
                {
                    "run_id": run.run_id,
                    "name": run.name,
                    "state": run.state,
                    "params": {name: run.params.get(name) for name in self.params},
                    "final": final,
                    "best": best,
                    "best_step": best_step,
                }
            )
        return out

    def to_json(self, arrays: bool = True) -> dict[str, Any]:
        """The REST answer's shape (`server.models.Comparison`); without `arrays`, each curve's
        steps and values are empty (`encode` splices in their JSON)."""
        return {
            "runs": [
                {"run_id": r.run_id, "name": r.name, "state": r.state, "created_at": r.created_at} for r in self.runs
            ],
            "metrics": [
                {
                    "name": m.name,
                    "optimisation": m.optimisation,
                    "best_run": m.best_run,
                    "curves": [
                        {
                            "run_id": run_id,
                            "replica": curve.replica,
                            "steps": curve.steps.tolist() if arrays else [],
                            "values": curve.values.tolist() if arrays else [],
                            "total": curve.total,
                        }
                        for run_id, curve in m.curves.items()
                    ],
                }
                for m in self.metrics
            ],
            "params": self.params,
            "hidden_params": self.hidden_params,
            "rows": self.rows(),
            "points": self.points,
        }


def encode(checked: Mapping[str, Any], comparison: Comparison) -> str:
    """The JSON text of an answer: `checked` (`to_json(arrays=False)` after the response model
    has checked it) with each curve's arrays spliced in from its pre-encoded text."""
    fragments = {}
    for metric in comparison.metrics:
        for run_id, curve in metric.curves.items():
            fragments[(metric.name, run_id)] = curve
    metrics = []
    for metric in checked["metrics"]:
        curves = []
        for item in metric["curves"]:
            curve = fragments[(metric["name"], item["run_id"])]
            head = json.dumps({key: value for key, value in item.items() if key not in ("steps", "values")})
            curves.append(f'{head[:-1]},"steps":{curve.steps_json},"values":{curve.values_json}}}')
        head = json.dumps({key: value for key, value in metric.items() if key != "curves"})
        metrics.append(f'{head[:-1]},"curves":[{",".join(curves)}]}}')
    rest = json.dumps({key: value for key, value in checked.items() if key != "metrics"}, allow_nan=False)
    return f'{rest[:-1]},"metrics":[{",".join(metrics)}]}}'


def _best_run(curves: Mapping[str, Curve], optimisation: Optimisation) -> str | None:
    best: tuple[float, str] | None = None
    for run_id, curve in curves.items():
        value, _ = curve.summary.best(optimisation)
        if value is None:
            continue
        key = value if optimisation == "min" else -value
        if best is None or key < best[0]:
            best = (key, run_id)
    return None if best is None else best[1]


def compare_runs(
    store: RunStore,
    run_ids: Sequence[str],
    *,
    metrics: Sequence[str] | None = None,
    points: int = DEFAULT_POINTS,
    optimisation: Mapping[str, str] | None = None,
    all_params: bool = False,
    cache: DigestCache | None = None,
) -> Comparison:
    """Compare runs (ids, e.g. from `select_runs`). `metrics`: the metrics shown (default every
    metric any run has); `points`: the most points a curve keeps; `optimisation`: a direction per
    metric where the name's guess is wrong (`values.optimisation_for`)."""
    points = check_points(points)
    directions = check_optimisations(optimisation)
    cache = cache or DigestCache(store)
    runs = cache.digests(run_ids, points)
    names = sorted({name for run in runs for name in run.curves})
    if metrics:
        unknown = [name for name in metrics if name not in names]
        if unknown:
            raise ValueError(f"metrics: no run has {unknown[0]!r} (they have: {', '.join(names) or 'no metrics'})")
        names = list(dict.fromkeys(metrics))
    compared = []
    for name in names:
        direction = optimisation_for(name, directions)
        curves = {run.run_id: run.curves[name] for run in runs if name in run.curves}
        compared.append(MetricComparison(name, direction, _best_run(curves, direction), curves))
    every = sorted({key for run in runs for key in run.params}, key=lambda k: (k.startswith("topology."), k))
    shown = every if all_params else differing((run.canonical_params for run in runs), encoded=True)
    return Comparison(runs, compared, shown, points, all_params, len(every) - len(shown))
