"""A comparison of runs: per metric a downsampled curve per run and the best run; a table of
final and best values and the params that differ; which params matter. Plain data, the one
view-model of a comparison: the REST answer the JupyterLab panel draws (`server.models.Comparison`)
and the notebook's plotly figure for other front-ends.

**Best** is defined, and said (`MetricComparison.best_rule`), because runs of different lengths
are not alike: by default the best final value among the runs that succeeded (a run stopped at
step 20 is not the best of runs that trained 400 steps because its loss was lowest there, nor is
one whose loss dipped once and then blew up; with none succeeded, among all);
`best="common_step"` compares every run at the last step all of them reached; `best="all"` takes
each run's best point whatever its state or length. Under every rule a diverged run (its last
point NaN or infinite, or its final value worse than its first) never wins, and the rule says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..runstore.layout import logged_by_the_code
from ..service import RunService
from ..service.digests.cache import Curve, RunDigest
from ..service.digests.downsample import DEFAULT_POINTS, check_points
from ..service.digests.params import differing
from ..service.digests.values import Optimization, check_optimizations, optimization_for
from ..sweeps.importance import ParamImportance, param_importance

__all__ = ["BEST_RULES", "MetricComparison", "Comparison", "compare_runs", "encode"]

#: How "best" is chosen (see the module docstring).
BEST_RULES = ("succeeded", "common_step", "all")


@dataclass(frozen=True)
class MetricComparison:
    name: str
    optimization: Optimization
    best_run: str | None  # the best run by `best_rule`; None when no run has a finite value
    curves: dict[str, Curve]  # run id -> its curve (runs without the metric are absent)
    best_rule: str = ""  # what "best" meant: "lowest among the 3 runs that succeeded"
    common_step: float | None = None  # the step compared at (`best="common_step"`)


@dataclass(frozen=True)
class Comparison:
    runs: list[RunDigest]
    metrics: list[MetricComparison]
    params: list[str]  # the param columns shown: those that differ, or all
    points: int
    all_params: bool = False
    hidden_params: int = 0  # params left out because every run has the same value
    extra: dict[str, Any] = field(default_factory=dict)
    importance: list[ParamImportance] = field(default_factory=list)  # for `objective`
    objective: str | None = None  # the metric the params' view is about (`primary_metric`)

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
                best[metric.name], best_step[metric.name] = curve.summary.best(metric.optimization)
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
                    "optimization": m.optimization,
                    "best_run": m.best_run,
                    "best_rule": m.best_rule,
                    "common_step": m.common_step,
                    "curves": [
                        {
                            "run_id": run_id,
                            "replica": curve.replica,
                            "steps": curve.steps.tolist() if arrays else [],
                            "values": curve.values.tolist() if arrays else [],
                            "times": curve.times.tolist() if arrays else [],
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
            "objective": self.objective,
            "importance": [
                {"param": i.param, "importance": i.importance, "correlation": i.correlation, "runs": i.runs}
                for i in self.importance
            ],
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
            head = json.dumps({key: value for key, value in item.items() if key not in ("steps", "values", "times")})
            curves.append(
                f'{head[:-1]},"steps":{curve.steps_json},"values":{curve.values_json},"times":{curve.times_json}}}'
            )
        head = json.dumps({key: value for key, value in metric.items() if key != "curves"})
        metrics.append(f'{head[:-1]},"curves":[{",".join(curves)}]}}')
    rest = json.dumps({key: value for key, value in checked.items() if key != "metrics"}, allow_nan=False)
    return f'{rest[:-1]},"metrics":[{",".join(metrics)}]}}'


def _at_step(curve: Curve, step: float) -> float | None:
    """The curve's value at `step`: its last point at or before it (None when it has none)."""
    at = int(np.searchsorted(curve.steps, step, side="right")) - 1
    return float(curve.values[at]) if at >= 0 else None


def diverged(curve: Curve, optimization: Optimization) -> bool:
    """The run went the wrong way: its last point is NaN or infinite, or its final value is
    worse than its first (a loss that ends above where it started). It never wins "best"
    (unless every run went that way, when only the NaN ends are left out)."""
    if curve.ends_non_finite:
        return True
    if not len(curve.values):
        return False
    first, final = float(curve.values[0]), float(curve.values[-1])  # the chosen points are finite
    return final > first if optimization == "min" else final < first


def _best_run(
    curves: Mapping[str, Curve], optimization: Optimization, states: Mapping[str, str], rule: str
) -> tuple[str | None, str, float | None]:
    """(the best run, what "best" meant, the step compared at) by `rule` (`BEST_RULES`)."""
    word = "lowest" if optimization == "min" else "highest"
    common = None
    gone = sorted(run_id for run_id, curve in curves.items() if diverged(curve, optimization))
    if len(gone) == len(curves):  # every run went that way (a metric that is meant to): only NaN ends are out
        gone = sorted(run_id for run_id, curve in curves.items() if curve.ends_non_finite)
    candidates = {run_id: curve for run_id, curve in curves.items() if run_id not in gone}
    if rule == "common_step":
        ends = [float(curve.steps[-1]) for curve in curves.values() if len(curve.steps)]
        common = min(ends) if ends else None
        meaning = f"{word} at step {common:g}, the last step every run reached" if common is not None else ""
    elif rule == "succeeded":
        succeeded = {run_id: c for run_id, c in candidates.items() if states.get(run_id) == "Succeeded"}
        if succeeded:
            candidates = succeeded
            meaning = f"{word} final value among the {len(succeeded)} run{'s' * (len(succeeded) != 1)} that succeeded"
        else:
            meaning = f"{word} final value of all runs (none succeeded)"
    else:
        meaning = f"{word} value of all runs, at any step"
    if gone:
        meaning += f"; diverged (NaN, or ended worse than it began), never best: {', '.join(gone)}"
    best: tuple[float, str] | None = None
    for run_id, curve in candidates.items():
        if common is not None:
            value = _at_step(curve, common)
        elif rule == "all":
            value = curve.summary.best(optimization)[0]
        else:
            value = curve.summary.final
        if value is None or not np.isfinite(value):
            continue
        key = value if optimization == "min" else -value
        if best is None or key < best[0]:
            best = (key, run_id)
    return (None if best is None else best[1]), meaning, common


def compare_runs(
    service: RunService,
    run_ids: Sequence[str],
    *,
    metrics: Sequence[str] | None = None,
    points: int = DEFAULT_POINTS,
    optimization: Mapping[str, str] | None = None,
    all_params: bool = False,
    best: str = "succeeded",
) -> Comparison:
    """Compare runs (ids, e.g. from `select_runs`). `metrics`: the metrics shown (default every
    metric any run has); `points`: the most points a curve keeps; `optimization`: a direction per
    metric where the name's guess is wrong (`values.optimization_for`); `best`: how the best run is
    chosen (`BEST_RULES`, see the module docstring)."""
    if best not in BEST_RULES:
        raise ValueError(f"best: {best!r} is not one of {', '.join(BEST_RULES)}")
    points = check_points(points)
    directions = check_optimizations(optimization)
    runs = service.digests.digests(run_ids, points)
    names = sorted({name for run in runs for name in run.curves})
    if metrics:
        unknown = [name for name in metrics if name not in names]
        if unknown:
            own = [name for name in names if logged_by_the_code(name)]  # the sampled system/ ones aside
            raise ValueError(f"metrics: no run has {unknown[0]!r} (they have: {', '.join(own) or 'no metrics'})")
        names = list(dict.fromkeys(metrics))
    else:  # the code's own metrics; the `system/` ones its owner sampled when named
        names = [name for name in names if logged_by_the_code(name)]
    states = {run.run_id: run.state for run in runs}
    compared = []
    for name in names:
        direction = optimization_for(name, directions)
        curves = {run.run_id: run.curves[name] for run in runs if name in run.curves}
        chosen, meaning, common = _best_run(curves, direction, states, best)
        compared.append(MetricComparison(name, direction, chosen, curves, meaning, common))
    every = sorted({key for run in runs for key in run.params}, key=lambda k: (k.startswith("topology."), k))
    differ = differing((run.canonical_params for run in runs), encoded=True)
    shown = every if all_params else differ
    importance: list[ParamImportance] = []
    first = primary_metric(compared, directions)
    if first is not None:
        # each run's final value: what a sweep's trial reports as its objective, so the sweep's
        # importance view and this one agree on the same runs
        values = [
            (curve.summary.final if curve is not None else None)
            for curve in (first.curves.get(run.run_id) for run in runs)
        ]
        importance = param_importance([run.params for run in runs], values, differ)
    return Comparison(
        runs,
        compared,
        shown,
        points,
        all_params,
        len(every) - len(shown),
        importance=importance,
        objective=first.name if first is not None else None,
    )


def primary_metric(
    metrics: Sequence[MetricComparison], directions: Mapping[str, str] | None = None
) -> MetricComparison | None:
    """The metric a comparison's params are judged by: the one given a direction (a sweep's
    objective), else `loss`, else the first."""
    for metric in metrics:
        if directions and metric.name in directions:
            return metric
    return next((m for m in metrics if m.name == "loss"), metrics[0] if metrics else None)
