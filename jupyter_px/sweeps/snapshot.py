"""status.json's view of a sweep's study: a row per trial, the best trial of a single-objective
sweep, the Pareto front of a multi-objective one (Optuna's `study.best_trials`: the complete
trials no other complete trial dominates). Written by the controller only; every surface
reads it (reads never act)."""

from __future__ import annotations

from typing import Any

from ..runstore.sweeps import ObjectiveRow, SweepStatus, TrialRow, TrialState
from .spec import SweepSpec

#: Intermediate points kept per trial in status.json (the journal keeps them all).
KEPT_POINTS = 500


def trial_state(frozen: Any) -> TrialState:
    import optuna

    if frozen.state == optuna.trial.TrialState.RUNNING and frozen.user_attrs.get("waiting"):
        return TrialState.PENDING  # its run waits in a queue (`reason` says why)
    return {
        optuna.trial.TrialState.RUNNING: TrialState.RUNNING,
        optuna.trial.TrialState.WAITING: TrialState.RUNNING,
        optuna.trial.TrialState.COMPLETE: TrialState.COMPLETE,
        optuna.trial.TrialState.PRUNED: TrialState.PRUNED,
    }.get(frozen.state, TrialState.STOPPED if frozen.user_attrs.get("stopped") else TrialState.FAILED)


def trial_row(frozen: Any, spec: SweepSpec) -> TrialRow:
    attrs = frozen.user_attrs
    state = trial_state(frozen)
    points = sorted(frozen.intermediate_values.items())[-KEPT_POINTS:]
    value = frozen.value if (state == TrialState.COMPLETE and spec.objective) else None
    if value is None and points and state != TrialState.FAILED:
        value = points[-1][1]
    values = None
    if state == TrialState.COMPLETE and spec.multi_objective and frozen.values:
        values = {o.name: v for o, v in zip(spec.objectives, frozen.values, strict=True)}
    elif state == TrialState.COMPLETE and spec.objective and value is not None:
        values = {spec.objective.name: value}
    runs = [rung["run_id"] for rung in attrs.get("rungs") or [] if rung.get("run_id")]
    return TrialRow(
        number=frozen.number,
        state=state,
        run_id=attrs.get("run_id"),
        params=attrs.get("params") or {},
        value=value,
        values=values,
        step=points[-1][0] if points else None,
        intermediate=points,
        reason=attrs.get("waiting") if state == TrialState.PENDING else attrs.get("reason"),
        started_at=attrs.get("started_at"),
        finished_at=attrs.get("finished_at"),
        runs=runs,
    )


def snapshot(study: Any, spec: SweepSpec, status: SweepStatus) -> SweepStatus:
    """`status` with the study's trials, the best trial or the Pareto front, filled in."""
    rows = [trial_row(frozen, spec) for frozen in study.get_trials(deepcopy=False)]
    status.trials = rows
    status.n_trials = spec.n_trials
    status.concurrency = spec.concurrency
    status.objectives = [ObjectiveRow(name=o.name, direction=o.direction) for o in spec.objectives]
    if spec.objective:
        status.objective = spec.objective.name
        status.direction = spec.objective.direction
        complete = [r for r in rows if r.state == TrialState.COMPLETE and r.value is not None]
        if complete:
            pick = min if spec.objective.direction == "minimize" else max
            status.best = pick(complete, key=lambda r: r.value or 0.0).number
    elif spec.multi_objective:
        done = any(r.state == TrialState.COMPLETE for r in rows)
        status.pareto = sorted(t.number for t in study.best_trials) if done else []
    return status
