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

Algorithm = Literal["grid", "random", "hyperband", "bayes", "tpe", "mapping"]
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

    kind: Literal["hyperband", "median", "truncation"]
    max_resource: int | None = None  # hyperband: max_iter
    reduction_factor: int = 3  # hyperband: eta
    interval_steps: int = 1  # median/truncation: evaluation_interval
    warmup_steps: int = 0  # median/truncation: min_interval
    min_trials: int = 1  # median/truncation: min_samples
    percentile: float | None = None  # truncation: percent (of the worst trials pruned)


class Resource(_Frozen):
    """Hyperband's resource: a parameter every trial gets, set to `max_iter` (the trial is pruned
    at an earlier step when it does badly)."""

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
    objective: Objective | None = None
    pruning: Pruning | None = None
    stop_rules: list[StopRule] = Field(default_factory=list)
    max_failure_percent: float | None = None
    seed: int | None = None
    startup_trials: int | None = None  # bo/bayes: random trials before TPE models the space
    resource: Resource | None = None
    grid_size: int | None = None
    notes: list[str] = Field(default_factory=list)

    def summary(self) -> list[tuple[str, str]]:
        """(what, value) rows, as `polyaxon check --definition` shows a group."""
        rows = [
            ("search algorithm", self.algorithm),
            ("trials", str(self.n_trials)),
            ("concurrency", str(self.concurrency)),
            (
                "objective",
                f"{self.objective.direction} {self.objective.name}" if self.objective else "none (no best trial)",
            ),
            ("pruning", self.pruning.kind if self.pruning else "off"),
        ]
        rows += [(f"param {name}", param.describe()) for name, param in self.params.items()]
        rows += [
            ("early stopping", f"{r.metric} {'<=' if r.direction == 'minimize' else '>='} {r.value:g}")
            for r in self.stop_rules
        ]
        return rows
