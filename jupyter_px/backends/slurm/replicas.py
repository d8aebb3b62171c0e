"""Each replica's state from what its task recorded and what Slurm says of the job: pure functions.

A task records its start (`task-<procid>.json`: node, port) and its end (`exit-<procid>.json`:
exit code, signal, whether its memory cgroup OOM-killed it) in the run directory, so every
replica's outcome is known without Slurm's accounting. What a record cannot say comes from the
job: still PENDING (and why), or ended by Slurm (TIMEOUT, NODE_FAIL, CANCELLED, ...) before a task
could record anything.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...runstore import ReplicaState, ReplicaStatus
from ...runstore.models import Reason
from .states import ENDED_BY_SLURM, ENDED_BY_SLURM_WORDS, base_state

#: srun's line for a task its step's cgroup killed: `srun: error: n1: task 1: Out Of Memory`.
_OOM_LINE = re.compile(r"task (\d+): Out Of Memory")


@dataclass(frozen=True)
class Records:
    """What the tasks wrote, by procid."""

    starts: dict[int, dict[str, Any]]
    exits: dict[int, dict[str, Any]]
    oom_tasks: frozenset[int] = frozenset()

    def all_ended(self, tasks: int) -> bool:
        """Every one of the job's `tasks` started and recorded its end."""
        return len(self.starts) == tasks and all(p in self.exits for p in self.starts)


class RecordReader:
    """Reads a job's task records as they appear. Each record is written once (a rename makes it
    whole), so a file is parsed once; a poll lists the folder and reads only what is new. The
    batch output is searched for srun's "Out Of Memory" lines only once a task was SIGKILLed."""

    def __init__(self, folder: Path, batch_output: Path | None = None):
        self.folder, self.batch_output = folder, batch_output
        self.starts: dict[int, dict[str, Any]] = {}
        self.exits: dict[int, dict[str, Any]] = {}

    def read(self) -> Records:
        try:
            names = [entry.name for entry in os.scandir(self.folder)]
        except OSError:
            names = []
        for name in names:
            kind, _, rest = name.partition("-")
            if kind not in ("task", "exit") or not rest.endswith(".json"):
                continue
            known = self.starts if kind == "task" else self.exits
            try:
                procid = int(rest[: -len(".json")])
                if procid in known:
                    continue
                known[procid] = json.loads((self.folder / name).read_text())
            except (OSError, ValueError):
                continue  # not whole yet: read next time
        oom: set[int] = set()
        killed = any(end.get("signal") == "SIGKILL" and not end.get("oom") for end in self.exits.values())
        if killed and self.batch_output is not None:
            try:
                text = self.batch_output.read_text(errors="replace")[-65536:]
            except OSError:
                text = ""
            oom = {int(m.group(1)) for m in _OOM_LINE.finditer(text)}
        return Records(dict(self.starts), dict(self.exits), frozenset(oom))


@dataclass(frozen=True)
class Ending:
    """What the run's end makes of a replica still running: its state, reason and message."""

    state: ReplicaState
    reason: str
    message: str


def ended_replica(
    replica: ReplicaStatus,
    record: dict[str, Any],
    *,
    oom_seen: bool,
    stopped_by_us: Ending | None,
    slurm_state: str | None,
    memory_mib: float | None,
) -> None:
    """Fill `replica` from its exit record. `stopped_by_us`: the run's ending, when the task
    ended after the backend signalled it; `slurm_state`: the job's state when Slurm ended it."""
    _outcome(replica, record, oom_seen, stopped_by_us, slurm_state, memory_mib)
    replica.points_lost = int(record.get("points_lost") or 0)
    replica.points_dropped = int(record.get("points_dropped") or 0)
    notice = record.get("notice")
    if notice:  # "master-0: 1,204 metric points not written: killed before they were flushed"
        said = str(notice).split(": ", 1)[-1]
        replica.message = f"{replica.message}; {said}" if replica.message else said


def _outcome(
    replica: ReplicaStatus,
    record: dict[str, Any],
    oom_seen: bool,
    stopped_by_us: Ending | None,
    slurm_state: str | None,
    memory_mib: float | None,
) -> None:
    code = int(record.get("code") or 0)
    signal = record.get("signal")
    replica.exit_code, replica.signal = code, signal
    replica.finished_at = record.get("finished_at")
    replica.message = record.get("message")
    if code == 0:
        replica.state, replica.reason, replica.message = ReplicaState.SUCCEEDED, Reason.COMPLETED, None
        return
    if record.get("oom") or (oom_seen and signal == "SIGKILL"):
        limit = f" ({memory_mib:g} MiB)" if memory_mib else ""
        replica.state, replica.reason = ReplicaState.FAILED, Reason.OOM_KILLED
        replica.message = f"killed by Slurm: over its memory limit{limit}"
        return
    if stopped_by_us is not None:
        replica.state, replica.reason = stopped_by_us.state, stopped_by_us.reason
        replica.message = stopped_by_us.message
        return
    state = base_state(slurm_state)
    if signal and state in ENDED_BY_SLURM:
        replica.state = ReplicaState.STOPPED if state == "CANCELLED" else ReplicaState.FAILED
        replica.reason, replica.message = ENDED_BY_SLURM[state], ENDED_BY_SLURM_WORDS[state]
        return
    replica.state = ReplicaState.FAILED
    if signal:
        replica.reason, replica.message = Reason.SIGNALED, replica.message or f"killed by {signal}"
    else:
        replica.reason, replica.message = Reason.ERROR, replica.message or f"exited with code {code}"


def unrecorded_end(replica: ReplicaStatus, started: bool, ending: Ending | None, slurm_state: str | None) -> None:
    """A replica whose task recorded no end, in a job that is over."""
    state = base_state(slurm_state)
    if ending is not None:
        replica.state, replica.reason, replica.message = ending.state, ending.reason, ending.message
    elif state in ENDED_BY_SLURM:
        replica.state = ReplicaState.STOPPED if state == "CANCELLED" else ReplicaState.FAILED
        replica.reason, replica.message = ENDED_BY_SLURM[state], ENDED_BY_SLURM_WORDS[state]
    elif started:
        replica.state, replica.reason = ReplicaState.LOST, "NoExitRecord"
        replica.message = f"its task ended without recording its exit (the job ended {state or 'unknown'})"
    else:
        replica.state, replica.reason = ReplicaState.FAILED, "NeverStarted"
        replica.message = f"its task never started (the job ended {state or 'unknown'}); see slurm/batch.out"
