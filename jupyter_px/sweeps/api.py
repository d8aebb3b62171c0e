"""`jupyter_px.sweep(code_or_path, topology)` and `jupyter_px.Sweep(id | name | "last")`."""

from __future__ import annotations

import os
from typing import Any, Unpack

from ..api import Run
from ..runstore import RunStore
from ..runstore.sweeps import SweepStatus, TrialRow, state_word
from ..service import CodeOptions, CodeSource, Submission
from ..topology import Topology, parse_topology
from .service import SweepService
from .spec import SweepSpec, read_sweep
from .view_model import SweepViewModel


def sweep(
    code: str | os.PathLike | CodeSource,
    topology: Topology | str | dict,
    *,
    store: RunStore | None = None,
    **options: Unpack[CodeOptions],
) -> Sweep:
    """Start the sweep of `topology` (its `hptuning:` or `matrix:` section) over `code`; returns
    at once. Each trial is a whole distributed run of `code` with the trial's values. `options`
    are `jupyter_px.submit`'s for the code (name, workdir, args, language, push, submitted_from,
    source)."""
    service = SweepService(store.home if store else None)
    submission = Submission.of_code(code, topology, **options)
    sweep_id = service.start(submission)
    return Sweep(sweep_id, service=service)


class Sweep:
    """A handle on one sweep; every call reads its status afresh."""

    def __init__(self, ref: str = "last", store: RunStore | None = None, *, service: SweepService | None = None):
        self.service = service or SweepService(store.home if store else None)
        self.sweep_id = self.service.resolve(ref)
        self.record = self.service.record(self.sweep_id)

    def __repr__(self) -> str:
        view = self.service.view(self.sweep_id)
        counts = ", ".join(f"{n} {state_word(s).lower()}" for s, n in view.status.counts().items())
        problem = f"; {view.owner_problem}" if view.owner_problem else ""
        return f"<Sweep {self.sweep_id} {view.status.state.value} ({counts or 'no trials yet'}){problem}>"

    @property
    def name(self) -> str | None:
        return self.record.name

    @property
    def spec(self) -> SweepSpec:
        spec = read_sweep(parse_topology(self.record.topology))
        assert spec is not None
        return spec

    def status(self) -> SweepStatus:
        return self.service.status(self.sweep_id)

    def wait(self, timeout: float | None = None) -> SweepStatus:
        """Block until the sweep has ended (starting its controller again if it died)."""
        return self.service.wait(self.sweep_id, timeout=timeout)

    def stop(self) -> SweepStatus:
        """Stop every running trial (each whole run), then the sweep."""
        return self.service.stop(self.sweep_id)

    def resume(self) -> bool:
        return self.service.resume(self.sweep_id)

    def rows(self) -> list[TrialRow]:
        return sorted(self.status().trials, key=lambda t: t.number)

    def trials(self) -> list[Run]:
        """Each trial's `Run` (with `.params`), in trial order."""
        return [Run(run_id, service=self.service.runs) for run_id in self.service.trial_runs(self.sweep_id)]

    @property
    def best(self) -> Run | None:
        """The best trial's run (by the objective), None before one completed or without an
        objective; a sweep of several objectives has no one best: see `pareto`."""
        row = self.status().best_trial()
        return Run(row.run_id, service=self.service.runs) if row and row.run_id else None

    @property
    def pareto(self) -> list[Run]:
        """A multi-objective sweep's result: the runs of the trials on its Pareto front (no
        other complete trial is at least as good on every objective and better on one), in
        trial order; [] for a sweep of one objective."""
        status = self.status()
        by_number = {row.number: row for row in status.trials}
        rows = [by_number[n] for n in status.pareto or () if n in by_number]
        return [Run(row.run_id, service=self.service.runs) for row in rows if row.run_id]

    def view_model(self) -> SweepViewModel:
        """What a tuner looks at, as data (`jupyter_px.sweeps.view_model`): optimization history
        with the best so far, parameter importance, parallel coordinates, slices, a contour of
        the two most important parameters, and the Pareto front of a multi-objective sweep."""
        return self.service.view_model(self.sweep_id)

    def dataframe(self) -> Any:
        """One row per trial, like Optuna's `trials_dataframe`: number, value, state, values_<objective>, params_<name>,
        run_id, datetime_start, datetime_complete, duration. A pandas DataFrame when pandas is
        installed, else a list of dicts."""
        import datetime

        records = []
        for row in self.rows():
            start = datetime.datetime.fromtimestamp(row.started_at) if row.started_at else None
            end = datetime.datetime.fromtimestamp(row.finished_at) if row.finished_at else None
            record: dict[str, Any] = {"number": row.number, "value": row.value, "state": row.state.value}
            record.update({f"values_{k}": v for k, v in (row.values or {}).items()})
            record.update({f"params_{k}": v for k, v in row.params.items()})
            record.update(
                run_id=row.run_id,
                step=row.step,
                datetime_start=start,
                datetime_complete=end,
                duration=(end - start) if start and end else None,
                reason=row.reason,
            )
            records.append(record)
        try:
            import pandas
        except ImportError:
            return records
        return pandas.DataFrame.from_records(records)


def sweeps(store: RunStore | None = None, limit: int | None = None) -> list[Sweep]:
    service = SweepService(store.home if store else None)
    return [Sweep(view.sweep_id, service=service) for view in service.list(limit)]
