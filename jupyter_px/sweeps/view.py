"""A sweep as data: the one JSON shape (REST, `jupyter px sweep status --json`), and the rows of
its trials table (the CLI, `%px_sweeps`, the monitor). No display code: surfaces render these."""

from __future__ import annotations

import math
from typing import Any

from ..runstore.sweeps import SweepStatus, TrialRow, state_word
from .service import SweepView

TRIAL_HEADERS = ("TRIAL", "STATE", "VALUE", "STEP", "PARAMS", "RUN", "REASON")
SWEEPS_HEADERS = ("SWEEP", "NAME", "STATE", "TRIALS", "BEST", "MESSAGE")


#: How JSON, which has no such numbers, names a non-finite value (`nonfinite` beside the null).
NONFINITE_NAMES = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.6g}" if math.isfinite(value) else f"{value} (diverged)"


def params_text(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_number(v) if isinstance(v, float) else v}" for k, v in params.items())


def _value_text(status: SweepStatus, trial: TrialRow) -> str:
    """The objective's value; with several objectives, each one's (`loss=0.1, throughput=900`)."""
    if len(status.objectives) > 1:
        return params_text(trial.values) if trial.values else "-"
    return _number(trial.value)


def trial_rows(status: SweepStatus) -> list[tuple[str, ...]]:
    """A row per trial; `*` marks the best (or each trial on the Pareto front)."""
    marked = set(status.pareto or ()) | ({status.best} if status.best is not None else set())
    return [
        (
            f"{t.number}{' *' if t.number in marked else ''}",
            state_word(t.state.value),
            _value_text(status, t),
            "-" if t.step is None else str(t.step),
            params_text(t.params),
            t.run_id or "-",
            t.reason or "",
        )
        for t in sorted(status.trials, key=lambda t: t.number)
    ]


def counts_text(status: SweepStatus) -> str:
    counts = status.counts()
    done = sum(n for state, n in counts.items() if state not in ("Pending", "Running"))
    parts = [f"{done}/{status.n_trials} done"] + [f"{n} {state_word(s).lower()}" for s, n in counts.items()]
    return ", ".join(parts)


def best_text(status: SweepStatus) -> str:
    """The best trial, or a multi-objective sweep's Pareto front (its result: no one best)."""
    if status.pareto is not None:
        names = ", ".join(f"{o.name} {o.direction[:3]}" for o in status.objectives)
        trials = ", ".join(str(n) for n in status.pareto) or "none yet"
        return f"Pareto front ({names}): trials {trials}"
    best = status.best_trial()
    if best is None or status.objective is None:
        return "-"
    return f"trial {best.number}: {status.objective} {_number(best.value)}"


def sweep_rows(views: list[SweepView]) -> list[tuple[str, ...]]:
    return [
        (
            v.sweep_id,
            v.record.name or "-",
            v.status.state.value + (" (no controller)" if v.owner_problem else ""),
            counts_text(v.status),
            best_text(v.status),
            v.status.message or "",
        )
        for v in views
    ]


def trial_json(trial: TrialRow) -> dict[str, Any]:
    """A trial as JSON: a non-finite value (a diverged loss) is null, and `nonfinite` (only present
    then) names it by where it was: `value`, `values.<objective>`, `intermediate.<position>`."""
    out = trial.model_dump(mode="json")
    nonfinite: dict[str, str] = {}

    def finite(where: str, value: Any) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            nonfinite[where] = NONFINITE_NAMES[repr(value)]
            return None
        return value

    out["value"] = finite("value", out["value"])
    if out.get("values"):
        out["values"] = {name: finite(f"values.{name}", v) for name, v in out["values"].items()}
    out["intermediate"] = [[step, finite(f"intermediate.{i}", v)] for i, (step, v) in enumerate(out["intermediate"])]
    if nonfinite:
        out["nonfinite"] = nonfinite
    return out


def sweep_json(view: SweepView, trials: bool = True) -> dict[str, Any]:
    """The sweep's one JSON shape."""
    status = view.status
    out: dict[str, Any] = {
        "sweep_id": view.sweep_id,
        "name": view.record.name,
        "state": status.state.value,
        "message": status.message,
        "owner_problem": view.owner_problem,
        "created_at": view.record.created_at,
        "started_at": status.started_at,
        "finished_at": status.finished_at,
        "n_trials": status.n_trials,
        "concurrency": status.concurrency,
        "objective": status.objective,
        "direction": status.direction,
        "counts": status.counts(),
        "best": status.best,
        "objectives": [o.model_dump(mode="json") for o in status.objectives],
        "pareto": status.pareto,
    }
    if trials:
        out["trials"] = [trial_json(t) for t in sorted(status.trials, key=lambda t: t.number)]
    return out


def with_sweep_links(views: list[Any], summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run summaries (`run_json.run_summary`) with `sweep`: the trial's link to its sweep
    (`{sweep_id, trial, params}`) or None; the runs list of the CLI and of `%px_runs` alike."""
    for view, summary in zip(views, summaries, strict=True):
        summary["sweep"] = view.record.sweep.model_dump(mode="json") if view.record.sweep else None
    return summaries


def group_trials(views: list, rows: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The runs table with each sweep's trials together, under a row for the sweep, where its
    newest trial is; other runs stay where they are (newest first)."""
    out: list[tuple[str, ...]] = []
    placed: set[str] = set()
    width = len(rows[0]) if rows else 0
    for index, view in enumerate(views):
        link = view.record.sweep
        if link is None:
            out.append(rows[index])
            continue
        if link.sweep_id in placed:
            continue
        placed.add(link.sweep_id)
        out.append((f"sweep {link.sweep_id}", *([""] * (width - 1))))
        members = [i for i, v in enumerate(views) if v.record.sweep and v.record.sweep.sweep_id == link.sweep_id]
        for i in sorted(members, key=lambda i: views[i].record.sweep.trial):
            out.append((f"  t{views[i].record.sweep.trial} {rows[i][0]}", *rows[i][1:]))
    return out
