"""Hyperband that promotes: Polyaxon's `hyperband: {resume: true}`.

Hyperband (Li et al. 2018) runs brackets of successive halving. Bracket s (from s_max =
floor(log_eta(max_iter)) down to 0) starts n = ceil((s_max + 1) / (s + 1) * eta**s) random
configurations with r = max_iter * eta**-s of the resource each; after each rung it keeps the
best floor(n * eta**-(i + 1)) for the next rung, which gives them eta times the resource, until
max_iter. Polyaxon v0 runs the brackets one after the other and, with `resume: true`, resumes
each kept experiment from its checkpoint with the larger resource instead of restarting it
(polyaxon/experiment_groups/search_managers/hyperband.py and iteration_managers/hyperband.py,
`reduce_configs`: `experiment.resume(declarations=...)` with the resource raised).

Here a configuration is one Optuna trial and each rung one run of it: the trial's resource
parameter is the rung's resource, and a kept trial's next run gets `PX_RESUME_FROM` (the outputs
of its last run, copied into its own on first use: `tracking.get_outputs_path()`) and
`PX_RESUME_STEP` (the resource its last run reached: `tracking.get_resume_step()`). The trial's
objective points keep being reported at their steps, so its curve runs on across its rungs; the
value of a rung is the objective's last value in its run. Trials left out are Pruned with that
value; those that reach `max_iter` are Complete. The decisions are kept in the journal (each
trial's `rung` and `rung_values`), so a restarted controller takes them up where they were.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .spec import SweepSpec


@dataclass(frozen=True)
class Bracket:
    s: int
    first: int  # the number of its first trial (brackets run one after the other)
    configs: int  # trials it starts
    resources: tuple[float, ...]  # the resource of each rung
    keep: tuple[int, ...]  # trials each rung keeps for the next

    @property
    def numbers(self) -> range:
        return range(self.first, self.first + self.configs)


def brackets(max_iter: int, eta: int) -> list[Bracket]:
    """Hyperband's brackets for `max_iter` and `eta`, in the order they run (s_max first)."""
    s_max = int(math.floor(math.log(max_iter) / math.log(eta) + 1e-9))
    out, first = [], 0
    for s in range(s_max, -1, -1):
        n = math.ceil((s_max + 1) / (s + 1) * eta**s)
        r = max_iter * eta ** (-s)
        resources = tuple(r * eta**i for i in range(s + 1))
        keep = tuple(max(1, math.floor(n * eta ** (-(i + 1)))) for i in range(s))
        out.append(Bracket(s, first, n, resources, keep))
        first += n
    return out


@dataclass
class TrialView:
    """What the plan needs of a trial."""

    number: int
    finished: bool  # Complete, Pruned or Failed
    rung: int = 0  # the rung it runs (or is kept for)
    values: dict[int, float] = field(default_factory=dict)  # rung -> the objective's value there
    running: bool = False  # its rung's run is under way


@dataclass(frozen=True)
class Decision:
    number: int
    kept: bool  # kept for `rung` (else pruned after `rung - 1`)
    rung: int


class Plan:
    """Which run to start next, and what a closed rung decides."""

    def __init__(self, spec: SweepSpec):
        assert spec.resource is not None
        assert spec.pruning is not None  # Hyperband's schedule: max_iter and eta
        self.max_iter = int(spec.resource.value)
        self.brackets = brackets(self.max_iter, spec.pruning.reduction_factor)
        self.maximize = spec.objective is not None and spec.objective.direction == "maximize"
        self.resource = spec.resource

    def bracket_of(self, number: int) -> Bracket:
        return next(b for b in self.brackets if number in b.numbers)

    def resource_at(self, number: int, rung: int) -> int | float:
        value = self.bracket_of(number).resources[rung]
        return max(1, int(value + 1e-9)) if self.resource.type == "int" else value

    def last_rung(self, number: int) -> int:
        return self.bracket_of(number).s

    def decisions(self, trials: Iterable[TrialView]) -> list[Decision]:
        """For every rung whose trials have all run: the best `keep` kept for the next rung,
        the others pruned."""
        by_number = {t.number: t for t in trials}
        out = []
        for bracket in self.brackets:
            members = [by_number[n] for n in bracket.numbers if n in by_number]
            if len(members) < bracket.configs:
                break  # the bracket is still starting its trials
            for rung, keep in enumerate(bracket.keep):
                at_rung = [t for t in members if t.rung == rung and not t.finished]
                if not at_rung or any(rung not in t.values for t in at_rung):
                    continue
                ranked = sorted(at_rung, key=lambda t: t.values[rung], reverse=self.maximize)
                out += [Decision(t.number, i < keep, rung + 1) for i, t in enumerate(ranked)]
        return out

    def next_run(self, trials: Iterable[TrialView]) -> tuple[str, int] | None:
        """("new", bracket's s) for a new trial, ("resume", number) for a kept trial's next
        rung, or None while the current bracket waits for runs to end."""
        views = sorted(trials, key=lambda t: t.number)
        asked = len(views)
        for bracket in self.brackets:
            members = [t for t in views if t.number in bracket.numbers]
            waiting = [t for t in members if not t.finished and not t.running and t.rung not in t.values]
            resumable = [t for t in waiting if t.rung > 0]
            if resumable:
                return "resume", resumable[0].number
            if asked < bracket.first + bracket.configs:
                return "new", bracket.s
            if any(not t.finished for t in members):
                return None  # one bracket at a time, as Polyaxon runs its iterations
        return None


class PromotingController:
    """The controller's part for Hyperband with `resume: true` (mixed into `Controller`, whose
    study, spec, plan, active runs and `_start` it uses)."""

    study: Any
    spec: SweepSpec
    plan: Plan | None
    active: dict[int, Any]
    waiting: tuple[Any, dict[str, Any], dict[str, str] | None] | None
    stop_requested: bool
    service: Any

    def _start(self, trial: Any, params: dict[str, Any], resume: dict[str, str] | None = None) -> bool:
        raise NotImplementedError

    def _frozen(self, number: int) -> Any:
        return self.study.get_trials(deepcopy=False)[number]

    def _between_runs(self, frozen: Any) -> bool:
        """A trial with no run under way: its rung's run ended (its value is kept), or it is
        kept for a rung whose run has not started."""
        attrs = frozen.user_attrs
        rung = attrs.get("rung", 0)
        return str(rung) in (attrs.get("rung_values") or {}) or len(attrs.get("rungs") or []) <= rung

    def _submitted_run(self, number: int) -> str | None:
        raise NotImplementedError

    def _adopt_unrecorded(self, trial: Any, frozen: Any) -> bool:
        """After a restart: a kept trial whose next run was submitted but not recorded (the
        controller died in between) gets that run recorded, to be watched, not run twice."""
        assert self.plan is not None and self.spec.resource is not None
        attrs = frozen.user_attrs
        rung, rungs = attrs.get("rung", 0), attrs.get("rungs") or []
        if str(rung) in (attrs.get("rung_values") or {}) or len(rungs) > rung:
            return False
        run_id = self._submitted_run(frozen.number)
        if run_id is None:
            return False
        resource = self.plan.resource_at(frozen.number, rung)
        trial.set_user_attr("rungs", [*rungs, {"run_id": run_id, "resource": resource}])
        trial.set_user_attr("run_id", run_id)
        return True

    def _views(self) -> list[TrialView]:
        waiting = self.waiting[0].number if self.waiting is not None else None
        return [
            TrialView(
                number=frozen.number,
                finished=frozen.state.is_finished(),
                rung=frozen.user_attrs.get("rung", 0),
                values={int(k): v for k, v in (frozen.user_attrs.get("rung_values") or {}).items()},
                running=frozen.number in self.active or frozen.number == waiting,
            )
            for frozen in self.study.get_trials(deepcopy=False)
        ]

    def rung_done(self, number: int, trial: Any, value: float) -> bool:
        """Keep the value the trial's rung reached; True when that was its last rung."""
        assert self.plan is not None
        frozen = self._frozen(number)
        rung = frozen.user_attrs.get("rung", 0)
        trial.set_user_attr("rung_values", {**(frozen.user_attrs.get("rung_values") or {}), str(rung): value})
        return rung >= self.plan.last_rung(number)

    def launch_planned(self) -> None:
        """Apply the decisions of the rungs that closed, then start runs while fewer than
        `concurrency` run: a kept trial's next rung, else a new trial of the current bracket."""
        import optuna

        plan, resource = self.plan, self.spec.resource
        assert plan is not None and resource is not None
        for decision in plan.decisions(self._views()):
            frozen = self._frozen(decision.number)
            trial = optuna.trial.Trial(self.study, frozen._trial_id)
            if decision.kept:
                trial.set_user_attr("rung", decision.rung)
                continue
            ran = decision.rung - 1
            value = frozen.user_attrs["rung_values"][str(ran)]
            reached = plan.resource_at(decision.number, ran)
            trial.set_user_attr("reason", f"not kept after {resource.name} {reached} ({self._objective()} {value:g})")
            trial.set_user_attr("finished_at", time.time())
            self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        while len(self.active) < self.spec.concurrency and not self.stop_requested:
            if self.waiting is not None:
                trial, params, resume = self.waiting
                self.waiting = None
            else:
                step = plan.next_run(self._views())
                if step is None:
                    return
                trial, params, resume = self._planned(*step)
            if not self._start(trial, params, resume):
                return

    def _planned(self, kind: str, value: int) -> tuple[Any, dict[str, Any], dict[str, str] | None]:
        """The trial, its values and its resume settings for the plan's next run."""
        import optuna

        from .space import suggest

        plan, resource = self.plan, self.spec.resource
        assert plan is not None and resource is not None
        if kind == "new":
            trial = self.study.ask()
            params = {k: v for k, v in suggest(trial, self.spec).items() if k != resource.name}
            trial.set_user_attr("params", params)
            trial.set_user_attr("rung", 0)
            trial.set_user_attr("started_at", time.time())
            return trial, {**params, resource.name: plan.resource_at(trial.number, 0)}, None
        frozen = self._frozen(value)
        rung = frozen.user_attrs["rung"]
        previous = frozen.user_attrs["rungs"][-1]["run_id"]
        resume = {
            "PX_RESUME_FROM": str(self.service.paths(previous).outputs_dir),
            "PX_RESUME_STEP": str(plan.resource_at(value, rung - 1)),
        }
        params = {**frozen.user_attrs["params"], resource.name: plan.resource_at(value, rung)}
        return optuna.trial.Trial(self.study, frozen._trial_id), params, resume

    def _objective(self) -> str:
        return self.spec.objective.name if self.spec.objective else "value"
