"""The sweep controller: `python -m jupyter_px.sweeps.controller SWEEP_DIR`, one per sweep.

Started detached like the local supervisor (`jupyter_px.detached`: a go-pipe, its identity by
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
   run service with its values in `PX_PARAMS` (every replica), as pushed globals, in the record.

Killed and started again (`SweepService.resume`), it opens the same journal: finished trials
stay finished, trials whose runs still run are adopted (their runs never depended on it), and a
trial asked but never submitted is recorded Failed. A stop request (the `stop` file and
SIGTERM) stops every running trial, then the controller.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import re
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import detached
from ..runstore import RunState, RunStatus, RunStore
from ..runstore.models import RunOwner, TrialOf
from ..service import ResourceUnavailable, RunService, ScriptFile, SourceText, Submission
from ..topology import Topology, TopologyError, parse_topology, to_dict
from ..topology.sweep_spec import SweepSpec
from .engine import open_study
from .space import suggest
from .store import SweepState, SweepStatus, SweepStore, TrialRow, TrialState

log = logging.getLogger(__name__)

#: Seconds between passes.
POLL_S = 0.5
#: Trials failed the same way, with none succeeding, before the sweep stops and says why.
SAME_FAILURES = 3
#: Intermediate points kept per trial in status.json (the journal keeps them all).
KEPT_POINTS = 500


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


def with_params_env(topology: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """`topology` (a dict) with `PX_PARAMS` set wherever a replica's environment comes from: the
    environment's `env`, and every role default or index override that replaces it."""
    data = copy.deepcopy(topology)
    value = json.dumps(params, default=str)
    environment = data.setdefault("environment", {})
    environment["env"] = {**(environment.get("env") or {}), "PX_PARAMS": value}
    replicas = environment.get("replicas") or {}
    for key in ("default_worker", "default_ps", "default_evaluator"):
        default = replicas.get(key)
        if isinstance(default, dict) and default.get("env") is not None:
            default["env"]["PX_PARAMS"] = value
    for role in ("worker", "ps", "evaluator"):
        for override in replicas.get(role) or []:
            if isinstance(override, dict) and override.get("env") is not None:
                override["env"]["PX_PARAMS"] = value
    return data


_PLACEHOLDER = re.compile(r"{{\s*([A-Za-z_][A-Za-z0-9_]*)\s*}}")


def fill_args(arg: str, params: dict[str, Any]) -> str:
    """A script argument with `{{ name }}` replaced by the trial's value (Polyaxon's
    `--lr={{ lr }}`); a name the trial has no value for is left as written."""
    return _PLACEHOLDER.sub(lambda m: str(params[m.group(1)]) if m.group(1) in params else m.group(0), arg)


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


class Controller:
    def __init__(self, sweep_dir: Path):
        self.sweep_id = sweep_dir.name
        home = sweep_dir.parent.parent
        self.store = SweepStore(home)
        self.paths = self.store.paths(self.sweep_id)
        self.service = RunService(RunStore(home))
        self.record = self.store.record(self.sweep_id)
        topology = parse_topology(self.record.topology)
        spec = topology.sweep
        if spec is None:
            raise TopologyError([])
        self.spec: SweepSpec = spec
        self.chief = chief_key(topology)
        self.trial_topology = to_dict(topology.without_sweep())
        self.metrics = [
            m
            for m in {
                self.spec.objective.name if self.spec.objective else None,
                *(r.metric for r in self.spec.stop_rules),
            }
            if m
        ]
        self.pushed = self._pushed()
        self.code = (self.paths.code_dir / self.record.code.entrypoint).read_text()
        self.study = open_study(self.spec, self.paths.journal)
        self.active: dict[int, Active] = {}
        self.waiting: tuple[Any, dict[str, Any]] | None = None  # asked, refused for capacity for now
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
            if self.asked() >= self.spec.n_trials and not self.active and self.waiting is None:
                return self.finish(*self.outcome())
            self.write_status()
            time.sleep(POLL_S)

    def asked(self) -> int:
        return len(self.study.get_trials(deepcopy=False))

    def adopt(self) -> None:
        """After a restart: trials whose runs still run are watched again; one asked but never
        submitted is recorded Failed."""
        import optuna

        for frozen in self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
            trial = optuna.trial.Trial(self.study, frozen._trial_id)
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
        recording it in the journal: its record names the sweep and the trial."""
        for record, _ in self.service.store.list():
            link = record.sweep
            if link is not None and link.sweep_id == self.sweep_id and link.trial == number:
                return record.run_id
        return None

    def _active(self, trial: Any, run_id: str) -> Active:
        return Active(trial, run_id, self.service.metrics_reader(run_id, polled=False), self.chief)

    # ---- trials ------------------------------------------------------------------------------
    def launch(self) -> None:
        """Start trials while fewer than `concurrency` run. A trial the backend's capacity check
        refuses while others run waits for one of them to end (it is admitted when it fits);
        refused with nothing else running, it never will fit, and fails saying why."""
        while len(self.active) < self.spec.concurrency and not self.stop_requested:
            if self.waiting is not None:
                trial, params = self.waiting
                self.waiting = None
            elif self.asked() < self.spec.n_trials:
                trial = self.study.ask()
                if self.spec.mapping is not None:
                    params = dict(self.spec.mapping[trial.number])
                else:
                    params = suggest(trial, self.spec)
                trial.set_user_attr("params", params)
                trial.set_user_attr("started_at", time.time())
            else:
                return
            if not self._start(trial, params):
                return

    def _start(self, trial: Any, params: dict[str, Any]) -> bool:
        """Submit the trial's run; False when it must wait for capacity."""
        number = trial.number
        try:
            run_id = self.submit(number, params)
        except ResourceUnavailable as error:
            if self.active:
                self.waiting = (trial, params)
                log.info("trial %s waits for capacity: %s", number, error)
                return False
            self._not_submitted(trial, error)
            return True
        except Exception as error:
            self._not_submitted(trial, error)
            return True
        trial.set_user_attr("run_id", run_id)
        self.active[number] = self._active(trial, run_id)
        log.info("trial %s: run %s with %s", number, run_id, params)
        return True

    def _not_submitted(self, trial: Any, error: BaseException) -> None:
        import optuna

        trial.set_user_attr("reason", f"not submitted: {error}")
        trial.set_user_attr("finished_at", time.time())
        self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
        log.warning("trial %s not submitted: %s", trial.number, error)

    def submit(self, number: int, params: dict[str, Any]) -> str:
        code = self.record.code
        if code.entrypoint == "main.py":
            source: Any = SourceText(self.code, origin=code.source or "sweep", language=code.language)
        else:
            source = ScriptFile(code.entrypoint, text=self.code, origin=code.source)
        name = f"{self.record.name or self.sweep_id}-t{number}"
        return self.service.submit(
            Submission(
                source,
                with_params_env(self.trial_topology, params),
                name=name[:60],
                workdir=self.record.workdir,
                args=tuple(fill_args(arg, params) for arg in code.args),
                language=code.language,
                push={**self.pushed, **params},
                origin="sweep",
                trial=TrialOf(sweep_id=self.sweep_id, trial=number, params=params),
            )
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

    def trial_ended(self, number: int, status: RunStatus) -> None:
        """The trial's run has ended: complete with the objective's last value, or failed."""
        import optuna

        active = self.active.pop(number)
        trial = active.trial
        self.read_points(active)
        trial.set_user_attr("final", dict(active.last))
        trial.set_user_attr("finished_at", time.time())
        if status.state == RunState.SUCCEEDED:
            objective = self.spec.objective
            if objective is None:
                self.study.tell(trial, 0.0)  # no objective: the trial is complete, its value means nothing
                return
            final = active.last.get(objective.name)
            if final is None:
                trial.set_user_attr("reason", f"the chief ({self.chief}) never logged {objective.name}")
                self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
                return
            self.study.tell(trial, final)
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
            trial, _ = self.waiting
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
        import optuna

        trials = self.study.get_trials(deepcopy=False)
        done = [t for t in trials if t.state.is_finished()]
        for frozen in done:
            if frozen.state != optuna.trial.TrialState.COMPLETE:
                continue
            final = frozen.user_attrs.get("final") or {}
            for rule in self.spec.stop_rules:
                value = final.get(rule.metric)
                if value is not None and rule.reached(value):
                    sign = "<=" if rule.direction == "minimize" else ">="
                    assert value is not None
                    return SweepState.SUCCEEDED, (
                        f"early stopping: trial {frozen.number} reached {rule.metric} {value:g} ({sign} {rule.value:g})"
                    )
        failed = [t for t in done if t.state == optuna.trial.TrialState.FAIL and not t.user_attrs.get("stopped")]
        succeeded = [t for t in done if t.state != optuna.trial.TrialState.FAIL]
        if not succeeded and len(failed) >= min(SAME_FAILURES, self.spec.n_trials):
            reasons = {t.user_attrs.get("reason") for t in failed}
            if len(reasons) == 1:
                reason = reasons.pop()
                return SweepState.FAILED, f"the first {len(failed)} trials all failed the same way: {reason}"
        percent = self.spec.max_failure_percent
        if percent is not None and done and 100.0 * len(failed) / len(done) >= percent and len(done) >= 2:
            return SweepState.FAILED, f"{len(failed)} of {len(done)} finished trials failed ({percent:g}% allowed)"
        return None

    def outcome(self) -> tuple[SweepState, str]:
        """Succeeded when a trial completed (or was pruned, having run), else Failed, saying why."""
        rows = self.snapshot().trials
        if any(r.state in (TrialState.COMPLETE, TrialState.PRUNED) for r in rows):
            return SweepState.SUCCEEDED, self.summary()
        last = max(rows, key=lambda r: r.number, default=None)
        why = f" (the last: {last.reason})" if last is not None and last.reason else ""
        return SweepState.FAILED, f"all {len(rows)} trials failed{why}"

    def summary(self) -> str:
        counts = self.snapshot().counts()
        text = ", ".join(f"{n} {state.lower()}" for state, n in counts.items())
        best = self.status.best_trial()
        if best is not None and best.value is not None and self.spec.objective:
            text += f"; best: trial {best.number} {self.spec.objective.name} {best.value:g}"
        return text

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
        """status.json's view of the study: a row per trial, the best."""
        import optuna

        rows = []
        for frozen in self.study.get_trials(deepcopy=False):
            attrs = frozen.user_attrs
            state = {
                optuna.trial.TrialState.RUNNING: TrialState.RUNNING,
                optuna.trial.TrialState.WAITING: TrialState.RUNNING,
                optuna.trial.TrialState.COMPLETE: TrialState.COMPLETE,
                optuna.trial.TrialState.PRUNED: TrialState.PRUNED,
            }.get(frozen.state, TrialState.STOPPED if attrs.get("stopped") else TrialState.FAILED)
            points = sorted(frozen.intermediate_values.items())[-KEPT_POINTS:]
            value = frozen.value if (state == TrialState.COMPLETE and self.spec.objective) else None
            if value is None and points and state != TrialState.FAILED:
                value = points[-1][1]
            rows.append(
                TrialRow(
                    number=frozen.number,
                    state=state,
                    run_id=attrs.get("run_id"),
                    params=attrs.get("params") or {},
                    value=value,
                    step=points[-1][0] if points else None,
                    intermediate=points,
                    reason=attrs.get("reason"),
                    started_at=attrs.get("started_at"),
                    finished_at=attrs.get("finished_at"),
                )
            )
        self.status.trials = rows
        self.status.n_trials = self.spec.n_trials
        self.status.concurrency = self.spec.concurrency
        if self.spec.objective:
            self.status.objective = self.spec.objective.name
            self.status.direction = self.spec.objective.direction
            complete = [r for r in rows if r.state == TrialState.COMPLETE and r.value is not None]
            if complete:
                pick = min if self.spec.objective.direction == "minimize" else max
                self.status.best = pick(complete, key=lambda r: r.value or 0.0).number
        return self.status

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
