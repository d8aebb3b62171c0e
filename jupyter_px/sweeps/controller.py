"""The sweep controller: `python -m jupyter_px.sweeps.controller SWEEP_DIR`, one per sweep.

Started detached like the local supervisor (`jupyter_px.processes.detached`: a go-pipe, its identity by
pid and creation time recorded as the sweep's owner before it may run), so it outlives the
kernel, the CLI and the Jupyter server. It is the sweep's one owner and the only writer of its
`status.json`. Each pass it:

1. watches its running trials (each a whole distributed run with its own supervisor or
   follower): new points of the objective from the chief's `log_metrics` are reported to the
   Optuna trial at their step; when the pruner says so, the run is stopped (every replica) and
   the trial told Pruned with that step and value; a finished run tells its trial Complete
   (the objective's last value) or Failed (why);
2. ends the sweep early when an early-stopping value is reached, when the failure percentage
   is passed, or when every trial so far failed the same way (saying why, instead of failing
   the remaining trials one by one);
3. asks Optuna for new trials while fewer than `concurrency` run, and submits each through the
   run service with its values (the declarations and the trial's own) in `PX_PARAMS` (every
   replica), as pushed globals, in `{{ name }}` of its arguments (`topology.values`), and the
   trial's own in the record.

With two or more objectives nothing is reported on the way (no pruner ranks trials on several
values) and a trial's values are each objective's last. With Hyperband's `resume: true` it runs
Hyperband's brackets and decides after each rung which trials go on (`promotion.py`); a kept
trial's next run resumes from the outputs of its last. When the sweep ends (`ending.py`) and
what status.json says (`snapshot.py`) are written apart.

Killed and started again (`SweepService.resume`), it opens the same journal: finished trials
stay finished, trials whose runs still run are adopted (their runs never depended on it), and a
trial asked but never submitted is recorded Failed. A stop request (the `stop` file and
SIGTERM) stops every running trial, then the controller.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import backend_table
from ..processes import detached
from ..runstore import RunState, RunStatus, RunStore
from ..runstore.models import RunOwner, TrialOf
from ..runstore.sweeps import SweepState, SweepStatus
from ..service import LoadedCode, ResourceUnavailable, RunService, Submission
from ..topology import Topology, TopologyError, parse_topology, to_dict
from ..topology.values import fill_args, with_values
from .ending import early_end, outcome
from .engine import open_study
from .promotion import Plan, PromotingController
from .snapshot import snapshot
from .space import suggest
from .spec import SweepSpec, read_sweep

log = logging.getLogger(__name__)

#: Seconds between passes.
POLL_S = 0.5
#: The searches whose trials may all be chosen before any has run: one job array can hold them.
ARRAY_SEARCHES = frozenset({"grid", "random", "mapping", "hyperband", "asha"})


@dataclass
class Active:
    """A trial whose run is running: its Optuna trial, its run and what was reported so far."""

    trial: Any
    run_id: str
    reader: Any
    chief: str
    seen: dict[str, int] = field(default_factory=dict)
    last: dict[str, float] = field(default_factory=dict)
    last_step: int = -1


def chief_key(topology: Topology) -> str:
    """The replica whose metrics judge a trial: master 0, else worker 0."""
    return "master-0" if topology.replicas_section.n_masters > 0 else "worker-0"


def last_log_line(service: RunService, run_id: str, status: Any) -> str:
    """The last non-empty line of the first failed replica's log: usually the error."""
    failed = [r for r in status.replicas if r.state.value in ("Failed", "Lost")] or status.replicas
    for replica in failed[:1]:
        try:
            text = service.log_tail(run_id, replica.role, replica.index, 4096)
        except (OSError, ValueError):
            continue
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if lines:
            return lines[-1]
    return status.message or status.state.value


class Controller(PromotingController):
    def __init__(self, sweep_dir: Path):
        self.sweep_id = sweep_dir.name
        home = sweep_dir.parent.parent
        self.service = RunService(RunStore(home))
        self.store = self.service.sweep_store
        self.paths = self.store.paths(self.sweep_id)
        self.record = self.store.record(self.sweep_id)
        topology = parse_topology(self.record.topology)
        spec = read_sweep(topology)
        if spec is None:
            raise TopologyError([])
        self.spec: SweepSpec = spec
        self.chief = chief_key(topology)
        # A trial's values are the declarations with the trial's own added (Polyaxon's rule);
        # the run gets them all, so its topology carries neither section itself.
        self.declared = dict(topology.declarations or {})
        self.trial_topology = {
            k: v for k, v in to_dict(topology.without_sweep()).items() if k not in ("declarations", "run")
        }
        self.metrics = list(dict.fromkeys([*(o.name for o in spec.objectives), *(r.metric for r in spec.stop_rules)]))
        self.plan = Plan(spec) if spec.promote else None
        self.pushed = self._pushed()
        self.code = (self.paths.code_dir / self.record.code.entrypoint).read_text()
        self.study = open_study(self.spec, self.paths.journal)
        self.active: dict[int, Active] = {}
        # asked, refused for capacity for now: the trial, its values, its resume settings
        self.waiting: tuple[Any, dict[str, Any], dict[str, str] | None] | None = None
        self.ahead: list[tuple[Any, dict[str, Any]]] = []  # asked for a job array it refused: to start
        self.trial_backend = topology.without_sweep().backend_kind
        self.stop_requested = False
        self.status = self.store.status(self.sweep_id)

    def _pushed(self) -> dict[str, Any]:
        import pickle

        path = self.paths.code_dir / "pushed.pkl"
        return pickle.loads(path.read_bytes()) if path.exists() else {}

    # ---- the loop ----------------------------------------------------------------------------
    def run(self) -> None:
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stop_requested", True))
        me = detached.ProcessIdentity.current()
        self.status.owner = RunOwner(kind=None, pid=me.pid, started_at=me.started_at)
        self.status.state = SweepState.RUNNING
        self.status.started_at = self.status.started_at or time.time()
        self.status.message = None
        self.adopt()
        while True:
            if self.paths.stop.exists():
                self.stop_requested = True
            if self.stop_requested:
                self.stop_all("the sweep was stopped")
                return self.finish(SweepState.STOPPED, "stopped on request")
            for number in list(self.active):
                self.watch(number)
            verdict = self.early_end()
            if verdict is not None:
                state, message = verdict
                self.stop_all(message)
                return self.finish(state, message)
            self.launch()
            if self.asked() >= self.spec.n_trials and not self.active and self.waiting is None and self.all_done():
                return self.finish(*outcome(self.snapshot(), self.spec))
            self.write_status()
            time.sleep(POLL_S)

    def asked(self) -> int:
        return len(self.study.get_trials(deepcopy=False))

    def all_done(self) -> bool:
        """Every trial finished (a promoted Hyperband trial waits between its runs, unfinished)."""
        return all(t.state.is_finished() for t in self.study.get_trials(deepcopy=False))

    def adopt(self) -> None:
        """After a restart: trials whose runs still run are watched again; one asked but never
        submitted is recorded Failed."""
        import optuna

        for frozen in self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
            trial = optuna.trial.Trial(self.study, frozen._trial_id)
            between = self.plan is not None and self._between_runs(frozen)
            if between and not self._adopt_unrecorded(trial, frozen):
                continue  # its rung has run, or its next has not started: the plan decides
            run_id = frozen.user_attrs.get("run_id") or self._submitted_run(frozen.number)
            if run_id is None:
                trial.set_user_attr("reason", "the controller ended before this trial's run was submitted")
                self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
                continue
            trial.set_user_attr("run_id", run_id)
            active = self._active(trial, run_id)
            active.last_step = max(frozen.intermediate_values, default=-1)
            self.active[frozen.number] = active
            log.info("adopted trial %s (run %s)", frozen.number, run_id)

    def _submitted_run(self, number: int) -> str | None:
        """The run of trial `number` when the controller died after submitting it but before
        recording it in the journal: its record names the sweep and the trial (a promoted
        trial's newest run not yet recorded)."""
        frozen = self.study.get_trials(deepcopy=False)[number]
        known = {rung.get("run_id") for rung in frozen.user_attrs.get("rungs") or []}
        for record in self.service.records():  # newest first
            link = record.sweep
            if link is not None and link.sweep_id == self.sweep_id and link.trial == number:
                return record.run_id if record.run_id not in known else None
        return None

    def _active(self, trial: Any, run_id: str) -> Active:
        return Active(trial, run_id, self.service.metrics_reader(run_id, polled=False), self.chief)

    # ---- trials ------------------------------------------------------------------------------
    def launch(self) -> None:
        """Start trials while fewer than `concurrency` run. A trial the backend's capacity check
        refuses while others run waits for one of them to end (it is admitted when it fits);
        refused with nothing else running, it never will fit, and fails saying why. Where the
        backend has job arrays and the search does not learn from results, every trial goes at
        once, as one array its scheduler runs `concurrency` at a time (`launch_array`)."""
        if self.plan is not None:
            return self.launch_planned()
        if self.launch_array():
            return
        while len(self.active) < self.spec.concurrency and not self.stop_requested:
            if self.waiting is not None:
                trial, params, _ = self.waiting
                self.waiting = None
            elif self.ahead:
                trial, params = self.ahead.pop(0)
            elif self.asked() < self.spec.n_trials:
                trial, params = self._ask()
            else:
                return
            if not self._start(trial, params):
                return

    def _ask(self) -> tuple[Any, dict[str, Any]]:
        trial = self.study.ask()
        params = dict(self.spec.mapping[trial.number]) if self.spec.mapping is not None else suggest(trial, self.spec)
        trial.set_user_attr("params", params)
        trial.set_user_attr("started_at", time.time())
        return trial, params

    def launch_array(self) -> bool:
        """On the first pass of a sweep whose trials may all be chosen up front (grid, random,
        a mapping; Hyperband's and ASHA's pruning stops runs, it chooses none) on a backend with
        job arrays (Slurm): ask every trial and submit them together, one scheduler record
        whose tasks run `concurrency` at a time, the others pending with the scheduler's reason.
        Whether it did; refused (trials of different shapes), the trials asked are started one by
        one as ever."""
        if self.asked() or self.stop_requested or self.spec.algorithm not in ARRAY_SEARCHES:
            return False
        if self.spec.n_trials < 2 or not backend_table.entry(self.trial_backend).job_arrays:
            return False
        asked = [self._ask() for _ in range(self.spec.n_trials)]
        try:
            submissions = [self._submission(trial.number, params) for trial, params in asked]
            run_ids = self.service.submit_array(submissions, self.spec.concurrency, self.sweep_id)
        except Exception as error:
            log.info("the trials go one by one, not as one job array: %s", error)
            self.ahead = asked
            return False
        for (trial, _), run_id in zip(asked, run_ids, strict=True):
            trial.set_user_attr("run_id", run_id)
            self.active[trial.number] = self._active(trial, run_id)
        log.info("%d trials submitted as one job array, %d at a time", len(run_ids), self.spec.concurrency)
        return True

    def _start(self, trial: Any, params: dict[str, Any], resume: dict[str, str] | None = None) -> bool:
        """Submit the trial's run; False when it must wait for capacity."""
        number = trial.number
        try:
            run_id = self.submit(number, params, resume)
        except ResourceUnavailable as error:
            if self.active:
                self.waiting = (trial, params, resume)
                log.info("trial %s waits for capacity: %s", number, error)
                return False
            self._not_submitted(trial, error)
            return True
        except Exception as error:
            self._not_submitted(trial, error)
            return True
        trial.set_user_attr("run_id", run_id)
        if self.plan is not None and self.spec.resource is not None:
            rungs = self._frozen(number).user_attrs.get("rungs") or []
            trial.set_user_attr("rungs", [*rungs, {"run_id": run_id, "resource": params[self.spec.resource.name]}])
        active = self._active(trial, run_id)
        active.last_step = max(self._frozen(number).intermediate_values, default=-1)  # a resumed trial's curve goes on
        self.active[number] = active
        log.info("trial %s: run %s with %s", number, run_id, params)
        return True

    def _not_submitted(self, trial: Any, error: BaseException) -> None:
        import optuna

        trial.set_user_attr("reason", f"not submitted: {error}")
        trial.set_user_attr("finished_at", time.time())
        self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
        log.warning("trial %s not submitted: %s", trial.number, error)

    def submit(self, number: int, params: dict[str, Any], resume: dict[str, str] | None = None) -> str:
        return self.service.submit(self._submission(number, params, resume))

    def _submission(self, number: int, params: dict[str, Any], resume: dict[str, str] | None = None) -> Submission:
        """Trial `number`'s run: the sweep's code, the trial topology with its values."""
        code = self.record.code
        name = f"{self.record.name or self.sweep_id}-t{number}"
        values = {**self.declared, **params}
        return Submission(
            LoadedCode.kept(code, self.code),
            with_values(self.trial_topology, values, resume),
            name=name[:60],
            workdir=self.record.workdir,
            args=tuple(fill_args(arg, values) for arg in code.args),
            language=code.language,
            push={**self.pushed, **values},
            origin="sweep",
            trial=TrialOf(sweep_id=self.sweep_id, trial=number, params=params),
        )

    def read_points(self, active: Active) -> list[tuple[int, float]]:
        """New (step, value) points of the objective from the chief; the last values of the
        metrics the sweep watches are kept."""
        active.reader.poll()
        points: list[tuple[int, float]] = []
        for metric in self.metrics:
            series = active.reader.series(active.chief, metric)
            start = active.seen.get(metric, 0)
            for i in range(start, len(series)):
                active.last[metric] = series.values[i]
                if self.spec.objective and metric == self.spec.objective.name:
                    step = series.steps[i]
                    points.append((i if step is None else step, series.values[i]))
            active.seen[metric] = len(series)
        return points

    def watch(self, number: int) -> None:
        active = self.active[number]
        trial = active.trial
        for step, value in self.read_points(active):
            if step > active.last_step:
                trial.report(value, step)
                active.last_step = step
                if self.spec.pruning is not None and trial.should_prune():
                    return self.prune(number, step, value)
        status = self.service.keep(active.run_id)
        if status.state.finished:
            self.trial_ended(number, status)
            return
        # A trial whose run waits in a queue (a Slurm partition, an unschedulable pod) says so, and why.
        waiting = (status.message or "waiting to be scheduled") if status.state == RunState.PENDING else None
        if trial.user_attrs.get("waiting") != waiting:
            trial.set_user_attr("waiting", waiting)

    def trial_ended(self, number: int, status: RunStatus) -> None:
        """The trial's run has ended: complete with the objective's last value, or failed."""
        import optuna

        active = self.active.pop(number)
        trial = active.trial
        self.read_points(active)
        trial.set_user_attr("final", dict(active.last))
        trial.set_user_attr("finished_at", time.time())
        if status.state == RunState.SUCCEEDED:
            objectives = self.spec.objectives
            if not objectives:
                self.study.tell(trial, 0.0)  # no objective: the trial is complete, its value means nothing
                return
            missing = [o.name for o in objectives if active.last.get(o.name) is None]
            if missing:
                trial.set_user_attr("reason", f"the chief ({self.chief}) never logged {', '.join(missing)}")
                self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
                return
            finals = [active.last[o.name] for o in objectives]
            if self.plan is not None and not self.rung_done(number, trial, finals[0]):
                return  # kept for the plan's decision after this rung
            self.study.tell(trial, finals if self.spec.multi_objective else finals[0])
            return
        trial.set_user_attr("reason", last_log_line(self.service, active.run_id, status))
        trial.set_user_attr("run_state", status.state.value)
        self.study.tell(trial, state=optuna.trial.TrialState.FAIL)

    def prune(self, number: int, step: int, value: float) -> None:
        import optuna

        active = self.active[number]
        try:
            stopped = self.service.stop(active.run_id)
        except Exception as error:
            log.warning("trial %s: stopping run %s failed: %s", number, active.run_id, error)
        else:
            if stopped.state == RunState.SUCCEEDED:  # it ran to its end before the stop: complete
                log.info("trial %s: its run ended before it could be pruned at step %s", number, step)
                return self.trial_ended(number, stopped)
        del self.active[number]
        active.trial.set_user_attr(
            "reason",
            f"pruned at step {step} ({self.spec.objective.name if self.spec.objective else 'value'} {value:g})",
        )
        active.trial.set_user_attr("pruned_step", step)
        active.trial.set_user_attr("pruned_value", value)
        active.trial.set_user_attr("finished_at", time.time())
        self.study.tell(active.trial, state=optuna.trial.TrialState.PRUNED)
        log.info("trial %s pruned at step %s (value %s)", number, step, value)

    def stop_all(self, why: str) -> None:
        import optuna

        if self.waiting is not None:
            trial = self.waiting[0]
            self.waiting = None
            trial.set_user_attr("reason", why)
            trial.set_user_attr("stopped", True)
            self.study.tell(trial, state=optuna.trial.TrialState.FAIL)

        for number in list(self.active):
            active = self.active.pop(number)
            try:
                self.service.stop(active.run_id)
            except Exception as error:
                log.warning("stopping run %s failed: %s", active.run_id, error)
            active.trial.set_user_attr("reason", why)
            active.trial.set_user_attr("stopped", True)
            active.trial.set_user_attr("finished_at", time.time())
            self.study.tell(active.trial, state=optuna.trial.TrialState.FAIL)

    # ---- the sweep's end ---------------------------------------------------------------------
    def early_end(self) -> tuple[SweepState, str] | None:
        return early_end(self.spec, self.study.get_trials(deepcopy=False))

    def finish(self, state: SweepState, message: str) -> None:
        self.snapshot()
        self.status.state = state
        self.status.message = message
        self.status.finished_at = time.time()
        self.store.write_status(self.status)
        self.paths.stop.unlink(missing_ok=True)
        log.info("sweep %s %s: %s", self.sweep_id, state.value, message)

    # ---- status.json -------------------------------------------------------------------------
    def snapshot(self) -> SweepStatus:
        return snapshot(self.study, self.spec, self.status)

    def write_status(self) -> None:
        self.snapshot()
        try:
            self.store.write_status(self.status)
        except OSError as error:
            log.warning("cannot write the sweep's status: %s", error)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if not detached.await_go():
        return
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stdout)
    sweep_dir = Path(args[0])
    controller = Controller(sweep_dir)
    try:
        controller.run()
    except BaseException as error:
        log.exception("the sweep controller failed")
        try:
            controller.status.state = SweepState.FAILED
            controller.status.message = f"the controller failed: {error!r}"
            controller.status.finished_at = time.time()
            controller.store.write_status(controller.status)
        except Exception:
            pass
        detached.exit_now(1)
    detached.exit_now(0)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
