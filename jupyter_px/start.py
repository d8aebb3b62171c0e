"""What a submission starts, decided once for every surface: a sweep when its topology has a
sweep section (Polyaxon v0 `hptuning:`, v1 `matrix:`), else one run.

A user pastes a polyaxonfile with a sweep section into whatever they have at hand: a
`%%px_distributed` cell, `jupyter px run -f`, the sidebar (its REST `POST runs`) or
`jupyter_px.start`. Each of them once decided this on its own, and `jupyter px run` and the
sidebar decided it wrongly: they ran the job once, without the sweep's values. So the surfaces
call `start` and show what it says it started; the run service refuses a topology with a sweep
section (`RunService.submit`), so nothing can drop one silently again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from .service import Overrides, RunService, Submission
from .sweeps.spec import parse_polyaxonfile, read_sweep

if TYPE_CHECKING:
    from .sweeps.service import SweepService


@dataclass(frozen=True)
class Started:
    """What `start` started: its kind and id, and, for a sweep, what is not done as written
    (`SweepSpec.notes`: said once at the start by the surface)."""

    kind: Literal["run", "sweep"]
    id: str
    notes: tuple[str, ...] = ()

    @property
    def is_sweep(self) -> bool:
        return self.kind == "sweep"


def start(submission: Submission, runs: RunService | None = None, sweeps: SweepService | None = None) -> Started:
    """Validate, record and start what `submission` describes; returns at once. The errors are
    those of `RunService.submit` and `SweepService.start`, and nothing is left behind."""
    topology = parse_polyaxonfile(submission.topology) if submission.topology is not None else None
    spec = read_sweep(topology) if topology is not None else None
    if spec is None:
        parsed = replace(submission, topology=topology) if topology is not None else submission  # read once
        return Started("run", (runs or (sweeps.runs if sweeps else RunService())).submit(parsed))
    overrides = submission.overrides
    if overrides.any:  # `jupyter px run --workers 4 -f sweep.yaml`: every trial has 4 workers
        submission = replace(submission, topology=overrides.applied_to(topology), overrides=Overrides())
    if sweeps is None:
        from .sweeps.service import SweepService  # (Optuna's side: only for a sweep)

        sweeps = SweepService(runs=runs)
    return Started("sweep", sweeps.start(submission), tuple(spec.notes))
