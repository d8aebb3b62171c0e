"""The attempts of an elastic PyTorchJob: each group torchrun's agents formed again in the pods.

On `kubeflow`, elastic workers (`n_workers: "MIN:MAX"`) are torchrun's (`kubeflow/manifests.py`):
when a worker's pod loses its processes, the other agents form the group again without it, and
when its container restarts, with it; the pods stay, so nothing in the pods' states says that
training started again, from which checkpoint, in a world of which size. torchrun's agents say it
to the processes they start (`GROUP_WORLD_SIZE`, `WORLD_SIZE`), and rank 0 of every group prints
it into its log (`runner._say_round`), which the log sink keeps in the run's `rounds.jsonl`.

Each group after the first is the run's next attempt, shown as a local run of elastic workers
shows its re-formings (`backends/local/attempts.py`): the attempt that ended names the worker whose
container failed in it (the kubelet's record of that container, `terminations.py`) and the step
the run had logged (or the replica `jupyter px kill` signalled, whose training torchrun's agent
started again in the same container: `shared/chaos.py` keeps each kill), or the worker that came
back (the group grew); the next one says how many
workers take part and the newest shared checkpoint it resumed from; every replica's log is marked
where it begins. All of it is read again from the rounds and the attempts in the status, so a
follower that takes the run over goes on where the last one left it.
"""

from __future__ import annotations

import json
import logging
import os
from itertools import pairwise
from typing import Any

from ....runstore import ReplicaState, ReplicaStatus, metrics_tail
from ....runstore.checkpoints import SHARED_SCOPE, all_checkpoints
from ....runstore.layout import SYSTEM_INFIX
from ....runstore.models import AttemptRecord, Reason
from ...gang_retry import record_failure
from ..shared.chaos import kills_between
from .gang_restart import Follower, GangRestart

log = logging.getLogger(__name__)

#: What an attempt that ended with neither a failure seen nor a worker back says it was.
RE_FORMED = "torchrun formed its group again"


class ElasticRounds:
    """One run's torchrun groups as its attempts (see the module doc); inert for every run but
    a kubeflow run of elastic workers."""

    def __init__(self, follower: Follower, gang: GangRestart):
        self.follower, self.gang = follower, gang
        section = follower.topology.replicas_section
        self.enabled = follower.handle.backend == "kubeflow" and section.min_workers is not None
        self.masters = section.n_masters
        self._read_size = -1  # the size of `rounds.jsonl` when last read

    def observe(self) -> None:
        """Make each group formed since the last look the run's next attempt."""
        if not self.enabled:
            return
        path = self.follower.paths.rounds
        try:
            size = path.stat().st_size
        except OSError:
            return
        if size == self._read_size:
            return
        self._read_size = size
        rounds = _read_rounds(path)
        while len(rounds) > max(1, len(self.gang.attempts)):  # the first group is attempt 1, not a re-forming
            self._re_formed(rounds[0], rounds[max(1, len(self.gang.attempts))])

    def _workers(self, group: dict[str, Any]) -> int:
        return max(0, int(group["nodes"]) - self.masters)  # one agent per pod, the master's included

    def _re_formed(self, first: dict[str, Any], group: dict[str, Any]) -> None:
        """End the attempt running with what ended it, and start the next one at `group`."""
        gang, follower = self.gang, self.follower
        if not gang.attempts:
            gang.attempts.append(AttemptRecord(attempt=1, started_at=first["time"], workers=self._workers(first)))
        record = gang.attempts[-1]
        when, workers = float(group["time"]), self._workers(group)
        step = metrics_tail.step_at(self._metrics_files(), when)
        culprit = follower.terminations.latest_failure_between(record.started_at, when + 1) or self._killed(
            record.started_at, when
        )
        if culprit is not None:
            record_failure(record, culprit, step)
            record.finished_at = culprit.finished_at or when
        else:
            record.finished_at, record.step = when, step
            if record.workers is not None and workers > record.workers:
                record.returned = self._returning(workers - record.workers)
        record.retried = True
        resumed = self._resumed_from(when)
        attempt = record.attempt + 1
        since = f"from step {resumed:,}" if resumed is not None else "from the start"
        taking_part = f"{workers} worker{'s' if workers != 1 else ''}"
        line = f"--- attempt {attempt} ({since}, with {taking_part}): {record.describe() or RE_FORMED} ---\n"
        offsets = {f"{role}-{index}": replica_log.mark(line) for (role, index), replica_log in follower.logs.items()}
        gang.attempts.append(
            AttemptRecord(attempt=attempt, started_at=when, resumed_from=resumed, workers=workers, log_offsets=offsets)
        )
        gang.enabled, gang.attempt, gang.max_attempts = True, attempt, max(gang.max_attempts, attempt)
        log.info("run %s: %s", follower.run_id, line.strip(" -\n"))

    def _killed(self, after: float | None, before: float) -> ReplicaStatus | None:
        """The last replica `jupyter px kill` signalled from `after` to `before`: torchrun's agent
        starts its training again in the same container, so the kubelet never says it failed."""
        kills = kills_between(self.follower.run_dir, after, before)
        if not kills:
            return None
        kill = kills[-1]
        role, _, index = str(kill["replica"]).rpartition("-")
        return ReplicaStatus(
            role=role,
            index=int(index),
            state=ReplicaState.FAILED,
            reason=Reason.SIGNALED,
            signal=str(kill["signal"]),
            message="killed on request (jupyter px kill)",
            finished_at=float(kill["time"]),
        )

    def _returning(self, count: int) -> str:
        """Which workers came back when the group grew by `count`: those that left in an earlier
        attempt (it failed, and the next had fewer workers) and have not come back since."""
        away: list[str] = []
        attempts = self.gang.attempts
        for record, following in pairwise(attempts):
            if record.returned:
                away = [name for name in away if name not in record.returned.split(", ")]
            if record.failed is not None and _fewer(record.workers, following.workers):
                away.append(record.failed)
        if len(away) >= count:
            return ", ".join(away[:count])
        return f"{count} worker{'s' if count != 1 else ''}"

    def _resumed_from(self, when: float) -> int | None:
        """The newest shared checkpoint complete when the group began (+1 s: a file's time), the one
        `tracking.load_checkpoint()` gave it, where the run's outputs are on a shared volume."""
        steps = [
            c.step
            for c in all_checkpoints(str(self.follower.paths.outputs_dir))
            if c.scope == SHARED_SCOPE and c.time <= when + 1
        ]
        return max(steps) if steps else None

    def _metrics_files(self) -> list[str]:
        """The metrics files of the run's replicas' code (each process's too; not the system's)."""
        folder = self.follower.paths.metrics_dir
        try:
            names = os.listdir(folder)
            return [str(folder / name) for name in names if name.endswith(".jsonl") and SYSTEM_INFIX not in name]
        except OSError:
            return []


def _fewer(before: int | None, after: int | None) -> bool:
    return before is not None and after is not None and after < before


def _read_rounds(path: os.PathLike[str]) -> list[dict[str, Any]]:
    """The groups `rounds.jsonl` lists, oldest first (a line still being written is left for later)."""
    rounds = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.endswith("\n"):
                try:
                    rounds.append(json.loads(line))
                except ValueError:
                    continue
    return rounds
