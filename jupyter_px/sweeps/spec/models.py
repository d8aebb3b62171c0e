"""What a validated sweep is: the search (algorithm, parameters, trials, concurrency), the
objective a trial is judged by, and the rules that stop trials or the whole sweep early.

`sections.py` reads Polyaxon's `hptuning:`/`matrix:` sections into these; the sweep
engine, controller and views read only these."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .params import Param

#: Trials one sweep may run (each is a whole distributed run).
MAX_TRIALS = 10_000
#: Trials one sweep may run at once.
MAX_CONCURRENCY = 1_000

#: How trials are chosen (`jupyter_px/sweeps/engine.py` maps each onto an Optuna sampler):
#: grid, random, hyperband (random + Hyperband), bayes (Gaussian-process Bayesian optimization),
#: tpe, cmaes, nsga2 (NSGA-II), asha (random + successive halving), mapping (values given).
Algorithm = Literal["grid", "random", "hyperband", "bayes", "tpe", "cmaes", "nsga2", "asha", "mapping"]
Direction = Literal["minimize", "maximize"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class Objective(_Frozen):
    """The metric a trial is judged by (its last value logged by the chief) and which way is better."""

    name: str
    direction: Direction


class StopRule(_Frozen):
    """Stop the sweep once a finished trial's `metric` reaches `value` (Polyaxon's early stopping)."""

    metric: str
    value: float
    direction: Direction

    def reached(self, value: float) -> bool:
        return value <= self.value if self.direction == "minimize" else value >= self.value


class Pruning(_Frozen):
    """How running trials are stopped early (an Optuna pruner; see jupyter_px/sweeps/engine.py)."""

    kind: Literal["hyperband", "asha", "median", "truncation"]
    max_resource: int | None = None  # hyperband: max_iter
    min_resource: int = 1  # asha: min_iter (the first rung)
    reduction_factor: int = 3  # hyperband, asha: eta
    interval_steps: int = 1  # median/truncation: evaluation_interval
    warmup_steps: int = 0  # median/truncation: min_interval
    min_trials: int = 1  # median/truncation: min_samples
    percentile: float | None = None  # truncation: percent (of the worst trials pruned)


class Resource(_Frozen):
    """Hyperband's (and ASHA's) resource: a parameter every trial gets, set to `max_iter` (the
    trial is pruned at an earlier step when it does badly); with Hyperband's `resume: true`, set
    to each rung's resource in turn, the trial resuming from its checkpoint (`promotion.py`)."""

    name: str
    type: Literal["int", "float"] = "int"
    value: float


class SweepSpec(_Frozen):
    """A validated sweep: what to search, how, how many trials, how many at once, by what."""

    form: Literal["hptuning", "matrix"]
    algorithm: Algorithm
    params: dict[str, Param] = Field(default_factory=dict)
    mapping: list[dict[str, Any]] | None = None
    n_trials: int
    concurrency: int = 1
    objectives: list[Objective] = Field(default_factory=list)  # two or more: a multi-objective sweep
    pruning: Pruning | None = None
    promote: bool = False  # hyperband with resume: true (synchronous brackets, trials resumed)
    stop_rules: list[StopRule] = Field(default_factory=list)
    max_failure_percent: float | None = None
    seed: int | None = None
    startup_trials: int | None = None  # bo/bayes, cmaes: random trials before the model of the space
    sampler_options: dict[str, Any] = Field(default_factory=dict)  # cmaes, nsga2, tpe: Optuna's own options
    resource: Resource | None = None
    grid_size: int | None = None
    notes: list[str] = Field(default_factory=list)

    @property
    def objective(self) -> Objective | None:
        """The one objective of a single-objective sweep (None without one, or with several)."""
        return self.objectives[0] if len(self.objectives) == 1 else None

    @property
    def multi_objective(self) -> bool:
        return len(self.objectives) > 1

    def summary(self) -> list[tuple[str, str]]:
        """(what, value) rows, as `polyaxon check --definition` shows a group."""
        objectives = ", ".join(f"{o.direction} {o.name}" for o in self.objectives)
        if self.multi_objective:
            objectives += " (the result is their Pareto front)"
        pruning = self.pruning.kind if self.pruning else "off"
        rows = [
            ("search algorithm", self.algorithm),
            ("trials", str(self.n_trials)),
            ("concurrency", str(self.concurrency)),
            ("objective", objectives or "none (no best trial)"),
            ("pruning", "hyperband, kept trials resumed" if self.promote else pruning),
        ]
        rows += [(f"param {name}", param.describe()) for name, param in self.params.items()]
        rows += [
            ("early stopping", f"{r.metric} {'<=' if r.direction == 'minimize' else '>='} {r.value:g}")
            for r in self.stop_rules
        ]
        return rows
