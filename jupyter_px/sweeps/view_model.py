"""What a tuner looks at, as one JSON view-model per sweep: optimization history with the best
so far, parameter importance, parallel coordinates, slices and a contour of two parameters, and
a multi-objective sweep's Pareto front (what Optuna's dashboard and W&B sweeps show).

Data only, drawn by whichever front-end shows a sweep (the notebook's monitor, the sidebar):
every figure's numbers are produced here, once, from what a read sees (status.json and the
sweep's record; reads never act), typed by the pydantic models below and served by
`GET px/api/sweeps/<ref>/view` and `Sweep.view_model()`.

* History: the complete trials in trial order, each objective's value and the best so far.
* Importance: the comparison's calculation (`importance.py`: eta squared, the share of the
  objective's variance each parameter alone explains), over the complete trials, per objective;
  None below `MIN_TRIALS_FOR_IMPORTANCE` complete trials or without a parameter that varies.
* Parallel coordinates: an axis per parameter (numeric, or categorical with its categories)
  and per objective; a line per complete trial.
* Slices: per parameter, each complete trial's value of it against the (first) objective.
* Contour: the two most important parameters (numeric ones first): the trials' points, and a
  grid of the objective interpolated between them (inverse-distance weighting) to draw it as
  contours; log axes where the parameter is searched on a log scale.
* Pareto front (two or more objectives): every complete trial's values and which are on it.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..runstore.layout import logged_by_the_code
from ..runstore.sweeps import SweepStatus, TrialRow, TrialState
from .contour_grid import grid_axis, interpolate
from .importance import EVALUATOR, MIN_RUNS, param_importance
from .spec import SweepSpec

#: Complete trials below which no importance is computed (the comparison's threshold).
MIN_TRIALS_FOR_IMPORTANCE = MIN_RUNS
#: Cells per side of the contour's interpolated grid.
GRID = 24
#: The parameter kinds searched on a log scale (their axes are drawn log).
LOG_KINDS = ("loguniform", "qloguniform", "logspace", "geomspace", "lognormal", "qlognormal")

Number = float | int
#: The views of a sweep, the keys of `SweepViewModel.missing`.
ViewName = Literal["history", "importance", "parallel", "slices", "contour", "pareto"]
NO_TRIAL = "no trial has completed yet"


class _View(BaseModel):
    """A part of the view-model: every field is always sent (the JSON schema says so too, and the
    front-end's types are generated from it: `server/models/schema.py`)."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=True)


class ObjectiveView(_View):
    """An objective of the sweep and which way is better."""

    name: str
    direction: Literal["minimize", "maximize"]


class HistoryPoint(_View):
    """One complete trial's objective value, in trial order, with the best so far."""

    trial: int
    value: float
    best: float = Field(description="the best value of this objective among the trials so far")


class History(_View):
    """The optimization history: each complete trial's value and the running best (Optuna's plot)."""

    objective: str
    direction: Literal["minimize", "maximize"]
    points: list[HistoryPoint]


class Importance(_View):
    """How much each parameter matters to one objective (eta squared of its final values)."""

    objective: str
    evaluator: str = EVALUATOR
    params: dict[str, float] = Field(
        description="each parameter's eta squared (0..1, most important first): the share of the objective's "
        "variance its values alone explain; read each on its own, they need not add up to 1"
    )


class Axis(_View):
    """One axis of the parallel coordinates: a parameter's or an objective's value per trial."""

    name: str
    role: Literal["param", "objective"]
    categorical: bool = False
    categories: list[str] | None = Field(default=None, description="a categorical axis' labels; values index them")
    log: bool = False
    values: list[Number] = Field(description="one per trial of `ParallelCoordinates.trials`")
    range: tuple[float, float] | None = None


class ParallelCoordinates(_View):
    """A line per complete trial across its parameters and the objective (the axes below)."""

    trials: list[int]
    axes: list[Axis]
    color: str = Field(description="the objective the lines are colored by")


class Slice(_View):
    """One parameter against the objective: a point per complete trial."""

    param: str
    objective: str
    categorical: bool = False
    categories: list[str] | None = None
    log: bool = False
    trials: list[int]
    x: list[Number] = Field(description="the parameter's value (a category's index when categorical)")
    y: list[float] = Field(description="the objective's value")


class Contour(_View):
    """Two parameters against the objective: the trials as points and the objective interpolated on a grid."""

    x_param: str
    y_param: str
    objective: str
    x_log: bool = False
    y_log: bool = False
    x_categories: list[str] | None = None
    y_categories: list[str] | None = None
    trials: list[int]
    x: list[Number]
    y: list[Number]
    z: list[float]
    grid_x: list[float] = Field(
        description=f"{GRID} positions along x (log-spaced on a log axis); a categorical axis: its categories' indices"
    )
    grid_y: list[float]
    grid_z: list[list[float]] = Field(description="the objective interpolated at (grid_x[j], grid_y[i]): z[i][j]")


class ParetoPoint(_View):
    """One complete trial of a sweep with several objectives, and whether nothing beats it on all."""

    trial: int
    values: list[float] = Field(description="one per objective, in the order of `objectives`")
    on_front: bool


class ParetoFront(_View):
    """The trials no other trial beats on every objective, among all complete ones."""

    objectives: list[ObjectiveView]
    front: list[int] = Field(description="the trials on the front")
    points: list[ParetoPoint] = Field(description="every complete trial")


class TrialCurve(_View):
    """One trial's points of a metric, by step (its chief's)."""

    trial: int
    steps: list[float]
    values: list[float]


class MetricCurves(_View):
    """One metric the trials logged: a line per trial by step (the chief's points)."""

    name: str
    trials: list[TrialCurve]


#: Said once by a sweep without an objective, in place of every view that needs one.
NO_OBJECTIVE = (
    "this sweep has no objective, so no trial is better than another: every logged metric is drawn per trial; "
    "declare one to get the best trial, history, importance and the rest "
    "(hptuning: metric: {name: loss, optimization: minimize}, or v1's matrix: metric: {name: loss, goal: minimize})"
)
#: The most points a trial's line keeps in `metrics` (evenly strided, the last always kept).
METRIC_POINTS = 200


class SweepViewModel(_View):
    """Everything a sweep's tuning views draw, in one answer."""

    sweep_id: str
    name: str | None
    state: str
    algorithm: str
    objectives: list[ObjectiveView]
    n_trials: int
    counts: dict[str, int]
    best: int | None
    complete: int = Field(description="complete trials: the ones the views below are made of")
    history: list[History]
    importance: list[Importance] | None
    parallel: ParallelCoordinates | None
    slices: list[Slice]
    contour: Contour | None
    pareto: ParetoFront | None
    missing: dict[ViewName, str] = Field(
        description="why a view is missing or empty (too few trials, one parameter), by the view's name"
    )
    note: str | None = Field(description="said once above the views: how to declare an objective when there is none")
    metrics: list[MetricCurves] = Field(
        description="without an objective: every metric the trials logged, a line per trial; else []"
    )


def build_view_model(
    sweep_id: str,
    name: str | None,
    status: SweepStatus,
    spec: SweepSpec,
    logged: dict[int, dict[str, tuple[list[float], list[float]]]] | None = None,
) -> SweepViewModel:
    """The views from one read of the sweep; `logged` (a sweep without an objective): each
    trial's metrics as (steps, values), drawn per metric instead of the views an objective needs."""
    objectives = [ObjectiveView(name=o.name, direction=o.direction) for o in spec.objectives]
    complete = [
        t
        for t in sorted(status.trials, key=lambda t: t.number)
        if t.state == TrialState.COMPLETE and t.values and all(o.name in t.values for o in objectives)
    ]
    missing: dict[ViewName, str] = {}
    unmade: tuple[ViewName, ...] = ()
    if not complete and objectives:
        unmade, why = ("history", "parallel", "slices", *(("pareto",) if len(objectives) > 1 else ())), NO_TRIAL
    for view in unmade:
        missing[view] = why
    params = _params(complete, spec)
    if objectives and complete and not params:
        missing["slices"] = "no parameter varies among the complete trials"
    importance = _importance(complete, params, objectives, missing) if objectives else None
    order = list(importance[0].params) if importance else list(params)
    return SweepViewModel(
        sweep_id=sweep_id,
        name=name,
        state=status.state.value,
        algorithm=spec.algorithm,
        objectives=objectives,
        n_trials=status.n_trials,
        counts=status.counts(),
        best=status.best,
        complete=len(complete),
        history=[_history(complete, o) for o in objectives],
        importance=importance,
        parallel=_parallel(complete, params, objectives, spec) if objectives and complete else None,
        slices=[_slice(complete, name, params[name], objectives[0], spec) for name in params] if objectives else [],
        contour=_contour(complete, order, params, objectives, spec, missing) if objectives else None,
        pareto=_pareto(complete, objectives, status) if len(objectives) > 1 else None,
        missing=missing,
        note=None if objectives else NO_OBJECTIVE,
        metrics=[] if objectives else _metric_curves(logged or {}),
    )


def _metric_curves(logged: dict[int, dict[str, tuple[list[float], list[float]]]]) -> list[MetricCurves]:
    names = sorted({name for metrics in logged.values() for name in metrics})
    out = []
    for name in names:
        curves = []
        for trial in sorted(logged):
            if name not in logged[trial]:
                continue
            steps, values = logged[trial][name]
            keep = [i for i, v in enumerate(values) if math.isfinite(v)]
            stride = max(1, math.ceil(len(keep) / METRIC_POINTS))
            chosen = keep[::stride] + ([keep[-1]] if keep and (len(keep) - 1) % stride else [])
            curves.append(TrialCurve(trial=trial, steps=[steps[i] for i in chosen], values=[values[i] for i in chosen]))
        out.append(MetricCurves(name=name, trials=curves))
    return out


def trials_logged(status: SweepStatus, metrics_of: Any) -> dict[int, dict[str, tuple[list[float], list[float]]]]:
    """Each trial's metrics as (steps, values) of its chief (`metrics_of(run_id)`: the run
    service's {replica: {metric: Series}}); a step-less point is at its position."""
    out: dict[int, dict[str, tuple[list[float], list[float]]]] = {}
    for trial in status.trials:
        if not trial.run_id:
            continue
        try:
            data = metrics_of(trial.run_id)
        except (OSError, ValueError):
            continue
        merged: dict[str, tuple[list[float], list[float]]] = {}
        for replica in sorted(data, key=lambda key: (not key.startswith(("master", "chief")), key)):
            for metric, series in data[replica].items():
                if metric not in merged and logged_by_the_code(metric):
                    steps = [float(i if step is None else step) for i, step in enumerate(series.steps)]
                    merged[metric] = (steps, [float(v) for v in series.values])
        out[trial.number] = merged
    return out


def _history(trials: list[TrialRow], objective: ObjectiveView) -> History:
    pick = min if objective.direction == "minimize" else max
    points, best = [], None
    for trial in trials:
        value = (trial.values or {})[objective.name]
        best = value if best is None else pick(best, value)
        points.append(HistoryPoint(trial=trial.number, value=value, best=best))
    return History(objective=objective.name, direction=objective.direction, points=points)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


#: The kinds whose values are a list to choose from: categories, even when they are numbers.
CHOICE_KINDS = ("values", "pvalues")


def _params(trials: list[TrialRow], spec: SweepSpec | None = None) -> dict[str, list[str] | None]:
    """The parameters that vary among the trials: name -> its categories (None when numeric).
    A choice (`values: [0.0, 0.9]`) is categorical whatever its values: nothing lies between
    two of them; numbers among its categories are in numeric order."""
    out: dict[str, list[str] | None] = {}
    names = list(dict.fromkeys(name for t in trials for name in t.params))
    for name in names:
        values = [t.params.get(name) for t in trials]
        if len({repr(v) for v in values}) < 2:
            continue
        param = spec.params.get(name) if spec is not None else None
        numeric = all(_is_number(v) for v in values)
        if numeric and not (param is not None and param.kind in CHOICE_KINDS):
            out[name] = None
        elif numeric:
            out[name] = [str(v) for v in sorted({v for v in values if v is not None}, key=lambda v: float(v))]
        else:
            out[name] = sorted({str(v) for v in values})
    return out


def _coordinate(value: Any, categories: list[str] | None) -> Number:
    return categories.index(str(value)) if categories is not None else value


def _log(name: str, spec: SweepSpec, trials: list[TrialRow]) -> bool:
    param = spec.params.get(name)
    return bool(
        param and param.kind in LOG_KINDS and all(_is_number(t.params.get(name)) and t.params[name] > 0 for t in trials)
    )


def _importance(
    trials: list[TrialRow],
    params: dict[str, list[str] | None],
    objectives: list[ObjectiveView],
    missing: dict[ViewName, str],
) -> list[Importance] | None:
    """The comparison's calculation (`importance.param_importance`), per objective."""
    if len(trials) < MIN_TRIALS_FOR_IMPORTANCE or not params:
        missing["importance"] = (
            f"parameter importance needs {MIN_TRIALS_FOR_IMPORTANCE} complete trials and a parameter that varies "
            f"(here {len(trials)} and {len(params)})"
        )
        return None
    out = []
    for objective in objectives:
        values = [(t.values or {}).get(objective.name) for t in trials]
        found = param_importance([t.params for t in trials], values, list(params))
        out.append(Importance(objective=objective.name, params={i.param: i.importance for i in found}))
    return out


def _parallel(
    trials: list[TrialRow], params: dict[str, list[str] | None], objectives: list[ObjectiveView], spec: SweepSpec
) -> ParallelCoordinates:
    axes = []
    for name, categories in params.items():
        values = [_coordinate(t.params[name], categories) for t in trials]
        axes.append(
            Axis(
                name=name,
                role="param",
                categorical=categories is not None,
                categories=categories,
                log=_log(name, spec, trials),
                values=values,
                range=(float(min(values)), float(max(values))),
            )
        )
    for objective in objectives:
        values = [(t.values or {})[objective.name] for t in trials]
        axes.append(Axis(name=objective.name, role="objective", values=values, range=(min(values), max(values))))
    return ParallelCoordinates(trials=[t.number for t in trials], axes=axes, color=objectives[0].name)


def _slice(
    trials: list[TrialRow], name: str, categories: list[str] | None, objective: ObjectiveView, spec: SweepSpec
) -> Slice:
    return Slice(
        param=name,
        objective=objective.name,
        categorical=categories is not None,
        categories=categories,
        log=_log(name, spec, trials),
        trials=[t.number for t in trials],
        x=[_coordinate(t.params[name], categories) for t in trials],
        y=[(t.values or {})[objective.name] for t in trials],
    )


def _contour(
    trials: list[TrialRow],
    order: list[str],
    params: dict[str, list[str] | None],
    objectives: list[ObjectiveView],
    spec: SweepSpec,
    missing: dict[ViewName, str],
) -> Contour | None:
    if len(params) < 2 or len(trials) < 3:
        missing["contour"] = (
            f"a contour needs three complete trials and two parameters that vary (here {len(trials)} and {len(params)})"
        )
        return None
    numeric = [name for name in order if params[name] is None]
    chosen = (numeric + [name for name in order if name not in numeric])[:2]
    x_name, y_name = chosen
    objective = objectives[0].name
    x = [_coordinate(t.params[x_name], params[x_name]) for t in trials]
    y = [_coordinate(t.params[y_name], params[y_name]) for t in trials]
    z = [(t.values or {})[objective] for t in trials]
    x_log, y_log = _log(x_name, spec, trials), _log(y_name, spec, trials)
    x_cats, y_cats = params[x_name], params[y_name]
    # a categorical axis' grid is its categories: nothing lies between two of them
    grid_x = [float(i) for i in range(len(x_cats))] if x_cats else grid_axis(x, x_log, GRID)
    grid_y = [float(i) for i in range(len(y_cats))] if y_cats else grid_axis(y, y_log, GRID)
    return Contour(
        x_param=x_name,
        y_param=y_name,
        objective=objective,
        x_log=x_log,
        y_log=y_log,
        x_categories=params[x_name],
        y_categories=params[y_name],
        trials=[t.number for t in trials],
        x=x,
        y=y,
        z=z,
        grid_x=grid_x,
        grid_y=grid_y,
        grid_z=interpolate(x, y, z, grid_x, grid_y, x_log, y_log, x_cats is not None, y_cats is not None),
    )


def _pareto(trials: list[TrialRow], objectives: list[ObjectiveView], status: SweepStatus) -> ParetoFront:
    front = set(status.pareto or ())
    return ParetoFront(
        objectives=objectives,
        front=sorted(front),
        points=[
            ParetoPoint(
                trial=t.number, values=[(t.values or {})[o.name] for o in objectives], on_front=t.number in front
            )
            for t in trials
        ],
    )
