"""`SweepService`: start, find, observe, keep, stop and resume sweeps; every surface calls it
(the magics, the CLI, the REST handlers, `jupyter_px.sweep()` / `jupyter_px.Sweep`).

Reads never act: `view` and `list` read `status.json` and look (without acting) whether the
controller is there. The keepers are explicit: `keep` (called by `wait`) starts the controller
again when an unfinished sweep has none, which resumes it; `stop` stops it and its trials.
"""

from __future__ import annotations

import builtins
import dataclasses
import os
import time
from dataclasses import dataclass
from pathlib import Path

from .. import backend_table
from ..processes import detached
from ..runstore import RunStore
from ..runstore.models import RunOwner
from ..runstore.sweeps import SweepRecord, SweepState, SweepStatus, TrialState
from ..service import RunService, Submission, load_code, pickle_pushed
from ..service.waiting import keep_until_finished
from ..topology import TopologyError, to_dict
from ..topology.values import missing_names, no_value_problem, script_args
from .engine import check_engine
from .spec import parse_polyaxonfile, read_sweep
from .spec.polyaxonfile import value_names
from .view_model import SweepViewModel, build_view_model, trials_logged

CONTROLLER_MODULE = "jupyter_px.sweeps.controller"
#: How long `stop` waits for the controller to stop the trials and itself.
STOP_TIMEOUT_S = 120.0


class NoSweep(ValueError):
    """A topology without a sweep section given where a sweep is expected."""


@dataclass(frozen=True)
class SweepView:
    """A sweep as a read sees it: its record, its status, and what is wrong with its controller."""

    record: SweepRecord
    status: SweepStatus
    owner_problem: str | None = None

    @property
    def sweep_id(self) -> str:
        return self.record.sweep_id


class SweepService:
    def __init__(self, home: Path | str | None = None, *, runs: RunService | None = None):
        self.runs = runs or RunService(RunStore(home))
        self.store = self.runs.sweep_store

    def resolve(self, ref: str) -> str:
        return self.store.resolve(ref)

    # ---- start -------------------------------------------------------------------------------
    def start(self, submission: Submission) -> str:
        """Validate, record and start the sweep of `submission`'s topology (its controller); its
        id at once. Its trials are runs the controller submits through the run service."""
        if submission.topology is None:
            raise NoSweep("a sweep needs a topology with an hptuning: (Polyaxon v0) or matrix: (v1) section")
        topo = parse_polyaxonfile(submission.topology)
        spec = read_sweep(topo)
        if spec is None:
            raise NoSweep("this topology has no sweep: add an hptuning: (Polyaxon v0) or matrix: (v1) section")
        check_engine(spec)
        trial = topo.without_sweep()
        if spec.promote and not backend_table.entry(trial.backend_kind).outputs_here:
            raise ValueError(
                f"{spec.form}: hyperband's resume: true continues a trial from the checkpoint its last run left in "
                f"its outputs, which runs on {trial.backend_kind} do not share here: use resume: false there"
            )
        self.runs.check(trial)
        # a sweep keeps the code's text only: no source map, and its trials keep no results
        code = dataclasses.replace(load_code(submission.source, submission.language), files={}, returns=False)
        entrypoint = code.entrypoint if code.from_script else None
        args = script_args(topo, entrypoint, submission.args)
        missing = missing_names(args, value_names(topo, spec))
        if missing:
            raise TopologyError([no_value_problem("args", missing)])
        files: dict[str, bytes | str] = {code.entrypoint: code.text}
        if submission.push:
            files["pushed.pkl"] = pickle_pushed(submission.push)
        sweep_id = self.store.new_id(submission.name)
        record = SweepRecord(
            sweep_id=sweep_id,
            name=submission.name,
            topology=to_dict(topo),
            code=code.spec(args, submission.push),
            workdir=str(Path(submission.workdir or os.getcwd()).resolve()),
            submitted_from=submission.origin,
        )
        status = SweepStatus(
            sweep_id=sweep_id,
            n_trials=spec.n_trials,
            concurrency=spec.concurrency,
            objective=spec.objective.name if spec.objective else None,
            direction=spec.objective.direction if spec.objective else None,
        )
        self.store.create(record, files, status)
        self._start_controller(sweep_id)
        return sweep_id

    def _start_controller(self, sweep_id: str) -> bool:
        """Start the controller unless one runs (one owner: decided under a lock). Whether one was started."""
        paths = self.store.paths(sweep_id)
        with self.store.owner_lock(sweep_id):
            status = self.store.status(sweep_id)
            if status.owner is not None and _identity(status.owner).alive():
                return False
            env = {k: v for k, v in detached.importable_environ().items() if _kept(k)}
            env["PX_HOME"] = str(self.store.home)
            env["PYTHONUNBUFFERED"] = "1"
            with detached.start(
                CONTROLLER_MODULE, [str(paths.root)], log_path=paths.log, cwd=paths.root, env=env
            ) as child:
                status.owner = RunOwner(kind=None, pid=child.identity.pid, started_at=child.identity.started_at)
                self.store.write_status(status)
                child.go()
        return True

    # ---- reads -------------------------------------------------------------------------------
    def record(self, sweep_id: str) -> SweepRecord:
        """What was submitted (the sweep's record). Pure."""
        return self.store.record(sweep_id)

    def status(self, sweep_id: str) -> SweepStatus:
        """The sweep's stored status, as its controller last wrote it. Pure."""
        return self.store.status(sweep_id)

    def view(self, ref: str) -> SweepView:
        sweep_id = self.resolve(ref)
        status = self.store.status(sweep_id)
        return SweepView(self.store.record(sweep_id), status, self._owner_problem(status))

    def view_model(self, ref: str) -> SweepViewModel:
        """What a tuner looks at (`view_model.py`): history, importance, parallel coordinates,
        slices, a contour, the Pareto front; from one read of the sweep."""
        view = self.view(ref)
        spec = read_sweep(parse_polyaxonfile(view.record.topology))
        assert spec is not None
        logged = (
            None if spec.objectives else trials_logged(view.status, self.runs.metrics)
        )  # no objective: every metric
        return build_view_model(view.sweep_id, view.record.name, view.status, spec, logged)

    def _owner_problem(self, status: SweepStatus) -> str | None:
        if status.state.finished:
            return None
        if status.owner is None:
            return "the sweep's controller was never started"
        if _identity(status.owner).alive():
            return None
        return (
            f"the sweep controller (pid {status.owner.pid}) is gone; "
            "`jupyter px sweep resume` or wait() starts it again"
        )

    def list(self, limit: int | None = None) -> builtins.list[SweepView]:
        views = []
        for sweep_id in self.store.sweep_ids()[:limit]:
            try:
                views.append(self.view(sweep_id))
            except (OSError, ValueError):
                continue
        return views

    # ---- keepers -----------------------------------------------------------------------------
    def resume(self, ref: str) -> bool:
        """Start the controller of an unfinished sweep that has none (it resumes from the journal).
        Whether one was started (False: one runs already)."""
        sweep_id = self.resolve(ref)
        status = self.store.status(sweep_id)
        if status.state.finished:
            raise ValueError(f"sweep {sweep_id} has finished ({status.state.value}); start a new one")
        return self._start_controller(sweep_id)

    def keep(self, ref: str) -> SweepStatus:
        view = self.view(ref)
        if view.owner_problem is not None:
            self._start_controller(view.sweep_id)
        return self.store.status(view.sweep_id)

    def keep_all(self) -> int:
        """Resume every unfinished sweep whose controller is gone; how many are unfinished."""
        unfinished = 0
        for view in self.list():
            if not view.status.state.finished:
                unfinished += 1
                if view.owner_problem is not None:
                    self._start_controller(view.sweep_id)
        return unfinished

    def wait(self, ref: str, timeout: float | None = None, poll: float = 0.5) -> SweepStatus:
        sweep_id = self.resolve(ref)
        return keep_until_finished(lambda: self.keep(sweep_id), f"sweep {sweep_id}", timeout, poll)

    def stop(self, ref: str, timeout: float = STOP_TIMEOUT_S) -> SweepStatus:
        """Stop the sweep: its controller stops every running trial (each whole run), then itself.
        Without a controller, the trials' runs are stopped here."""
        sweep_id = self.resolve(ref)
        paths = self.store.paths(sweep_id)
        status = self.store.status(sweep_id)
        if status.state.finished:
            return status
        paths.stop.write_text(str(time.time()))
        owner = status.owner
        if owner is not None and _identity(owner).alive():
            detached.request_stop(_identity(owner))
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                status = self.store.status(sweep_id)
                if status.state.finished:
                    return status
                if not _identity(owner).alive():
                    break
                time.sleep(0.1)
        with self.store.owner_lock(sweep_id):
            status = self.store.status(sweep_id)
            if status.state.finished:
                return status
            for trial in status.trials:
                if trial.state in (TrialState.PENDING, TrialState.RUNNING) and trial.run_id:
                    self.runs.stop(trial.run_id)
                    trial.state = TrialState.STOPPED
                    trial.reason = "the sweep was stopped"
            status.state = SweepState.STOPPED
            status.message = "stopped on request (its controller was gone)"
            status.finished_at = time.time()
            self.store.write_status(status)
            paths.stop.unlink(missing_ok=True)
        return status

    def trial_runs(self, ref: str) -> builtins.list[str]:
        """The run ids of the sweep's trials, in trial order."""
        status = self.store.status(self.resolve(ref))
        return [t.run_id for t in sorted(status.trials, key=lambda t: t.number) if t.run_id]


def _kept(name: str) -> bool:
    """What the controller inherits: everything but a run's own variables (a sweep started from
    inside a replica is not that replica's); every backend's settings and tunables stay (their
    rows in the backend table name them)."""
    kept = name.startswith(backend_table.settings_prefixes()) or name in backend_table.tunables() or name == "PX_HOME"
    return kept or not name.startswith("PX_")


def _identity(owner: RunOwner) -> detached.ProcessIdentity:
    return detached.ProcessIdentity(owner.pid, owner.started_at)
