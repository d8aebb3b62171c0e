"""When a sweep ends before its last trial, and how it ended: the rules the controller applies to
its study each pass (pure functions of the trials, so each rule is read in one place).

* Polyaxon's early stopping: a finished trial whose metric reached an early-stopping `value`.
* The first trials all failed the same way (`SAME_FAILURES`): say why, instead of failing the
  remaining trials one by one.
* v1's `failure_early_stopping`: the failed share of the finished trials reached its percent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..runstore.sweeps import SweepState, SweepStatus, TrialState, state_word
from .spec import SweepSpec

#: Trials failed the same way, with none succeeding, before the sweep stops and says why.
SAME_FAILURES = 3


def early_end(spec: SweepSpec, trials: Sequence[Any]) -> tuple[SweepState, str] | None:
    """(the state, why) when the sweep ends now; None while it goes on."""
    import optuna

    done = [t for t in trials if t.state.is_finished()]
    for frozen in done:
        if frozen.state != optuna.trial.TrialState.COMPLETE:
            continue
        final = frozen.user_attrs.get("final") or {}
        for rule in spec.stop_rules:
            value = final.get(rule.metric)
            if value is not None and rule.reached(value):
                sign = "<=" if rule.direction == "minimize" else ">="
                return SweepState.SUCCEEDED, (
                    f"early stopping: trial {frozen.number} reached {rule.metric} {value:g} ({sign} {rule.value:g})"
                )
    failed = [t for t in done if t.state == optuna.trial.TrialState.FAIL and not t.user_attrs.get("stopped")]
    succeeded = [t for t in done if t.state != optuna.trial.TrialState.FAIL]
    if not succeeded and len(failed) >= min(SAME_FAILURES, spec.n_trials):
        reasons = {t.user_attrs.get("reason") for t in failed}
        if len(reasons) == 1:
            return SweepState.FAILED, f"the first {len(failed)} trials all failed the same way: {reasons.pop()}"
    percent = spec.max_failure_percent
    if percent is not None and done and 100.0 * len(failed) / len(done) >= percent and len(done) >= 2:
        return SweepState.FAILED, f"{len(failed)} of {len(done)} finished trials failed ({percent:g}% allowed)"
    return None


def outcome(status: SweepStatus, spec: SweepSpec) -> tuple[SweepState, str]:
    """Succeeded when a trial completed (or was pruned, having run), else Failed, saying why."""
    rows = status.trials
    if any(r.state in (TrialState.COMPLETE, TrialState.PRUNED) for r in rows):
        return SweepState.SUCCEEDED, summary(status, spec)
    last = max(rows, key=lambda r: r.number, default=None)
    why = f" (the last: {last.reason})" if last is not None and last.reason else ""
    return SweepState.FAILED, f"all {len(rows)} trials failed{why}"


def summary(status: SweepStatus, spec: SweepSpec) -> str:
    """`6 succeeded, 2 pruned; best: trial 3 loss 0.12` (or the Pareto front's trials)."""
    text = ", ".join(f"{n} {state_word(state).lower()}" for state, n in status.counts().items())
    best = status.best_trial()
    if best is not None and best.value is not None and spec.objective:
        text += f"; best: trial {best.number} {spec.objective.name} {best.value:g}"
    if status.pareto:
        text += f"; Pareto front: trials {', '.join(str(n) for n in status.pareto)}"
    return text
