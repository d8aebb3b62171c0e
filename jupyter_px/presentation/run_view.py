"""Build the run's view-model (`view_models.RunViewModel`) from the run service's reads, poll after poll.

A `RunViewSource` is kept per run by whoever shows it (the Jupyter server, one per run polled by
the JupyterLab extension; the ipywidgets monitor, its own), so each poll costs a stat per log and
reads only what the metrics files grew by (`MetricsReader` with a history budget: the view needs
the newest steps, never a long run's whole history). It only reads: a run whose owner is gone is
shown as recorded, with `owner_problem` saying so (`RunService.observe`).

What changed since the previous run of the same cell comes from a `changes` callable the caller
gives (the comparison layer computes it), so this module stays below the comparison.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..runstore.layout import logged_by_the_code
from .labels import is_tf_chief, replica_label
from .monitor import exception_line, last_line, phase_counts, replica_rows
from .rates import rank_paces, straggler_line
from .text import attempt_lines, resources_text
from .view_models import AttemptMark, CellChanges, Failure, PhaseCount, RankRate, ReplicaRowView, RunViewModel

#: Metric bytes read when a view starts on a long run (the newest steps; older ones are not shown).
HISTORY_BUDGET_BYTES = 1 << 20
#: Replicas whose last output line is read per poll (a stat each; a 1,000-replica run's table
#: shows its first rows and every failed one).
MAX_LAST_LINES = 64
#: Bytes of the failing replica's log end searched for its exception line.
FAILURE_BYTES = 8192

#: What changed since the previous run of the same cell, given the view's metrics reader
#: (`compare.changes.ChangesSince`).
Changes = Callable[[Any], CellChanges | None]


class RunViewSource:
    """The readers of one run kept between polls; `view()` is the run now.

    `reader`: a `MetricsReader` the caller already polls (the monitor's plot); else one of our
    own, polled by `view()`. Thread-safe (a server's read threads share a source)."""

    def __init__(self, service: Any, run_id: str, *, reader: Any = None, changes: Changes | None = None):
        from ..topology import parse_topology

        self.service = service
        self.run_id = run_id
        self.record = service.record(run_id)
        self._changes = changes
        self._lock = threading.Lock()
        self._own_reader = reader is None
        self.reader = reader or service.metrics_reader(run_id, polled=False, history_budget=HISTORY_BUDGET_BYTES)
        self.tf_chief = is_tf_chief(self.record.topology)
        try:
            topology = parse_topology(self.record.topology)
            self.resources = {spec.key: resources_text(spec.resources) for spec in topology.replicas()}
        except Exception:  # a record from a newer version: no resources column
            self.resources = {}
        self.replicas = service.replicas(run_id)
        self._ends = service.log_ends(run_id, self.replicas[:MAX_LAST_LINES])
        self._lines: dict[str, str] = {}
        self._failure: Failure | None = None
        self._final_changes: CellChanges | None = None
        #: The status the last `view()` observed, and what it found wrong with the run's owner.
        self.last_status: Any = None
        self.owner_problem: str | None = None

    def labels(self) -> dict[str, str]:
        return {f"{role}-{index}": replica_label(role, index, self.tf_chief) for role, index in self.replicas}

    def view(self) -> RunViewModel:
        with self._lock:
            observation = self.service.observe(self.run_id)
            status = self.last_status = observation.status
            self.owner_problem = observation.owner_problem
            if self._own_reader:
                self.reader.poll()
            for key, text in self._ends.poll().items():
                self._lines[key] = last_line(text)
            rows = replica_rows(
                self.replicas,
                status,
                resources=self.resources,
                progress=self._steps(),
                last_lines=self._lines,
                tf_chief=self.tf_chief,
            )
            labels = self.labels()
            paces = rank_paces(self._clocks())
            progress, fraction = self._progress(labels)
            return RunViewModel(
                run_id=self.run_id,
                name=self.record.name,
                backend=self.record.backend,
                state=status.state.value,
                finished=status.state.finished,
                reason=status.reason,
                message=status.message,
                owner_problem=observation.owner_problem,
                created_at=self.record.created_at,
                started_at=status.started_at,
                finished_at=status.finished_at,
                updated_at=status.updated_at,
                replicas=[ReplicaRowView(**row.__dict__) for row in rows],
                replicas_total=len(rows),
                phases=_phases(rows),
                counts=phase_counts(rows),
                progress=progress,
                progress_fraction=fraction,
                rates=[
                    RankRate(
                        replica=p.replica,
                        label=labels.get(p.replica, p.replica),
                        steps_per_s=p.steps_per_s,
                        lag_s=p.lag_s,
                        waiting=p.waiting,
                    )
                    for p in paces
                ],
                straggler=straggler_line(paces, labels),
                stalled=stalled_line(status, labels),
                failure=self._failure_of(status),
                launch=status.launch,
                changes=self._cell_changes(status.state.finished),
                attempt=next(iter(attempt_lines(status)), None),
                attempts=[
                    AttemptMark(
                        attempt=a.attempt, started_at=a.started_at, resumed_from=a.resumed_from, ended=a.describe()
                    )
                    for a in status.attempts
                ],
            )

    # ---- parts -------------------------------------------------------------------------------
    def _steps(self) -> dict[str, str]:
        out = {}
        for replica in self.reader.replicas():
            last, total = self.reader.progress(replica)
            if last is not None:  # steps count from 0: after step 29 of 30, 30 are done
                out[replica] = f"{last + 1}/{total}" if total else f"step {last}"
        return out

    def _progress(self, labels: Mapping[str, str]) -> tuple[str | None, float | None]:
        fractions = []
        for replica in self.reader.replicas():
            last, total = self.reader.progress(replica)
            if last is not None and total:
                fractions.append((min(1.0, (last + 1) / total), last, total, replica))
        if not fractions:
            return None, None
        fraction, last, total, replica = min(fractions)
        slowest = f" (slowest: {labels.get(replica, replica)})" if len(fractions) > 1 else ""
        return f"step {last + 1}/{total}{slowest}", fraction

    def _clocks(self) -> dict[str, tuple[list[int | None], Any]]:
        """Each replica's (steps, times) of the metric it logged most often (its own: not the
        `system/` metrics its owner samples)."""
        clocks = {}
        for replica, metrics in self.reader.data.items():
            logged = [series for name, series in metrics.items() if logged_by_the_code(name)]
            if logged:
                series = max(logged, key=len)
                clocks[replica] = (series.steps, series.times)
        return clocks

    def _cell_changes(self, finished: bool) -> CellChanges | None:
        if self._changes is None:
            return None
        if self._final_changes is not None:
            return self._final_changes
        changes = self._changes(self.reader)
        if finished:
            self._final_changes = changes
        return changes

    def _failure_of(self, status: Any) -> Failure | None:
        from ..run_text import failed_replicas

        failed = failed_replicas(status)
        if not failed:
            return None
        if self._failure is not None:
            return self._failure
        first = min(failed, key=lambda r: r.finished_at or 0)
        try:
            size = self.service.log_size(self.run_id, first.role, first.index)
            text, _ = self.service.read_log(
                self.run_id, first.role, first.index, offset=max(0, size - FAILURE_BYTES), limit=FAILURE_BYTES
            )
        except (OSError, ValueError):
            text = ""
        line = exception_line(text) or first.message or (first.reason or "failed")
        place = first.failure  # the runner's record: the notebook cell and line the code raised in
        failure = Failure(
            replica=replica_label(first.role, first.index, self.tf_chief),
            line=line,
            cell_id=place.cell_id if place else None,
            cell_line=place.line if place and place.cell_id else None,
        )
        if status.state.finished:
            self._failure = failure  # read once: the log of a finished run does not change
        return failure


def _phases(rows: list[Any]) -> list[PhaseCount]:
    """Replicas per phase, in the order people read a run's progress (done, going, waiting, bad)."""
    order = ["Succeeded", "Running", "stalled", "starting", "Pending", "Restarting", "Stopped", "Failed", "Lost"]
    counts: dict[str, tuple[str, int]] = {}
    for row in rows:
        phase = "Succeeded" if row.phase.startswith("stopped when") else row.phase
        state = "Pending" if phase == "starting" else row.state
        counts[phase] = (state, counts.get(phase, (state, 0))[1] + 1)
    ranked = sorted(counts.items(), key=lambda item: order.index(item[0]) if item[0] in order else len(order))
    return [PhaseCount(phase=phase, state=state, count=count) for phase, (state, count) in ranked]


def stalled_line(status: Any, labels: Mapping[str, str]) -> str | None:
    """`Stalled: worker-1 (no step for 75 s), master-0 (...): jupyter px stacks RUN shows where each
    rank is`, for the Running replicas the run's owner marked stalled; None when there are none."""
    now = time.time()
    stalled = [
        f"{labels.get(r.key, r.key)} (no step for {now - r.stalled_since:.0f} s)"
        for r in status.replicas
        if r.stalled_since is not None and r.state.value == "Running"
    ]
    if not stalled:
        return None
    return f"Stalled: {', '.join(stalled)}: `jupyter px stacks {status.run_id}` shows where each rank is"
