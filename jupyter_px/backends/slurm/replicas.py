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
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...runstore import ReplicaState, ReplicaStatus
from ...runstore.models import Reason
from .kills import NODE_FAIL, TIMEOUT, BatchSays, SlurmKill, mib, parse
from .states import ENDED_BY_SLURM, ENDED_BY_SLURM_WORDS, base_state


@dataclass(frozen=True)
class Records:
    """What the tasks wrote, by procid, and what Slurm said in the batch output."""

    starts: dict[int, dict[str, Any]]
    exits: dict[int, dict[str, Any]]
    says: BatchSays = BatchSays()
    #: when the batch output was last written, as of the read that brought its newest lines (a
    #: line read late, on a loaded machine, was still written then: `follower._kills`)
    said_at: float | None = None

    def all_ended(self, tasks: int, killed: Iterable[int] = ()) -> bool:
        """Every one of the job's `tasks` started and recorded its end (or Slurm killed it)."""
        ended = set(self.exits) | set(killed)
        return len(self.starts) == tasks and all(p in ended for p in self.starts)


class RecordReader:
    """Reads a job's task records as they appear, and the batch output's new lines. Each record
    is written once (a rename makes it whole), so a file is parsed once; a poll lists the folder
    and reads only what is new, and only the batch output's bytes added since the last read."""

    def __init__(self, folder: Path, batch_output: Path | None = None, offset: int = 0):
        self.folder, self.batch_output = folder, batch_output
        self.starts: dict[int, dict[str, Any]] = {}
        self.exits: dict[int, dict[str, Any]] = {}
        #: where this reader's part of the batch output begins (a requeued job's next attempt
        #: appends to the same file, `requeues.py`)
        self._offset = offset
        self._partial = ""
        self._lines: list[str] = []
        self._says = BatchSays()
        self._said_at: float | None = None

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
        self._read_batch_output()
        return Records(dict(self.starts), dict(self.exits), self._says, self._said_at)

    def _read_batch_output(self) -> None:
        if self.batch_output is None:
            return
        try:
            with open(self.batch_output, "rb") as handle:
                stat = os.fstat(handle.fileno())
                if stat.st_size < self._offset:  # written again from its start
                    self._offset, self._partial = 0, ""
                handle.seek(self._offset)
                added = handle.read(1 << 20)
        except OSError:
            return
        if not added:
            return
        self._said_at = stat.st_mtime
        self._offset += len(added)
        text = self._partial + added.decode("utf-8", errors="replace")
        lines = text.split("\n")
        self._partial = lines.pop()
        said = [line for line in lines if "error" in line]
        if said:
            self._lines += said
            self._says = parse(self._lines)


@dataclass(frozen=True)
class Ending:
    """What the run's end makes of a replica still running: its state, reason and message."""

    state: ReplicaState
    reason: str
    message: str


@dataclass(frozen=True)
class Hit:
    """What Slurm did to one task: its kill, the node, the replicas it took together, and the
    memory the replica declared (None: none, so the partition's default applied)."""

    kill: SlurmKill | None
    node: str | None
    together: tuple[str, ...] = ()
    declared_mib: float | None = None
    time_limit: str | None = None
    failed_nodes: tuple[str, ...] = ()  # the nodes the batch output says failed ("Node failure on")


def ended_replica(
    replica: ReplicaStatus,
    record: dict[str, Any],
    *,
    hit: Hit,
    stopped_by_us: Ending | None,
    slurm_state: str | None,
) -> None:
    """Fill `replica` from its exit record. `hit`: what Slurm said of its task; `stopped_by_us`:
    the run's ending, when the task ended after the backend signalled it; `slurm_state`: the
    job's state when Slurm ended it."""
    _outcome(replica, record, hit, stopped_by_us, slurm_state)
    replica.points_lost = int(record.get("points_lost") or 0)
    replica.points_dropped = int(record.get("points_dropped") or 0)
    notice = record.get("notice")
    if notice:  # "master-0: 1,204 metric points not written: killed before they were flushed"
        said = str(notice).split(": ", 1)[-1]
        replica.message = f"{replica.message}; {said}" if replica.message else said


def _outcome(
    replica: ReplicaStatus,
    record: dict[str, Any],
    hit: Hit,
    stopped_by_us: Ending | None,
    slurm_state: str | None,
) -> None:
    code = int(record.get("code") or 0)
    signal = record.get("signal")
    replica.exit_code, replica.signal = code, signal
    replica.finished_at = record.get("finished_at")
    replica.message = record.get("message")
    if code == 0:
        replica.state, replica.reason, replica.message = ReplicaState.SUCCEEDED, Reason.COMPLETED, None
        return
    oom_kill = hit.kill is not None and hit.kill.cause == Reason.OOM_KILLED
    if record.get("oom") or (oom_kill and signal == "SIGKILL"):
        replica.state, replica.reason = ReplicaState.FAILED, Reason.OOM_KILLED
        replica.message = oom_message(hit, record)
        return
    if stopped_by_us is not None:
        replica.state, replica.reason = stopped_by_us.state, stopped_by_us.reason
        replica.message = stopped_by_us.message
        return
    if signal and hit.kill is not None:
        replica.state, replica.reason, replica.message = ReplicaState.FAILED, hit.kill.cause, kill_message(hit, {})
        return
    state = base_state(slurm_state)
    if signal and state in ENDED_BY_SLURM and not _beside_a_failed_node(state, hit):
        replica.state = ReplicaState.STOPPED if state == "CANCELLED" else ReplicaState.FAILED
        replica.reason, replica.message = ENDED_BY_SLURM[state], _slurm_words(state, hit)
        return
    replica.state = ReplicaState.FAILED
    if signal:
        replica.reason, replica.message = Reason.SIGNALED, replica.message or f"killed by {signal}"
    else:
        replica.reason, replica.message = Reason.ERROR, replica.message or f"exited with code {code}"


def _beside_a_failed_node(state: str | None, hit: Hit) -> bool:
    """A task on a sound node of a job that ended NODE_FAIL, the failed nodes named: Slurm ended it
    because of the replica on the failed node (`culprit.blame` then names that one), its own node
    did not fail."""
    return state == "NODE_FAIL" and bool(hit.failed_nodes) and hit.node not in hit.failed_nodes


def killed_replica(replica: ReplicaStatus, hit: Hit, seen_at: float) -> None:
    """A replica whose task Slurm killed whole (no exit record): what Slurm said, when it was
    first read."""
    assert hit.kill is not None
    replica.state, replica.reason = ReplicaState.FAILED, hit.kill.cause
    replica.finished_at = seen_at
    if hit.kill.cause == Reason.OOM_KILLED:
        replica.signal, replica.exit_code = "SIGKILL", 128 + 9
    replica.message = kill_message(hit, {})


def kill_message(hit: Hit, record: dict[str, Any]) -> str:
    assert hit.kill is not None
    cause = hit.kill.cause
    if cause == Reason.OOM_KILLED:
        return oom_message(hit, record)
    if cause == TIMEOUT:
        return _slurm_words("TIMEOUT", hit)
    if cause == NODE_FAIL:
        return f"its node {hit.kill.node} failed" if hit.kill.node else ENDED_BY_SLURM_WORDS["NODE_FAIL"]
    return ENDED_BY_SLURM_WORDS.get(cause.upper(), f"ended by Slurm ({cause})")


def _slurm_words(state: str, hit: Hit) -> str:
    words = ENDED_BY_SLURM_WORDS[state]
    if state == "TIMEOUT" and hit.time_limit:
        words += f" ({hit.time_limit})"
    if state == "NODE_FAIL" and hit.node:
        words = f"its node {hit.node} failed"
    return words


def oom_message(hit: Hit, record: dict[str, Any]) -> str:
    """`killed by Slurm for memory on n2: its step's tasks there (worker-0, worker-1) used
    612.4 MiB, over their limit of 600 MiB (job accounting (OverMemoryKill))`: Slurm's own
    figures where it gave them (job accounting's line, the cgroup's limit and peak), else the
    memory the replica declared."""
    kill, where = hit.kill, f" on {hit.node}" if hit.node else ""
    if kill is not None and kill.used_bytes and kill.limit_bytes:
        many = len(hit.together) > 1
        who = f"its step's tasks there ({', '.join(hit.together)})" if many else "its step's task there"
        text = (
            f"killed by Slurm for memory{where}: {who} used {mib(kill.used_bytes)}, over "
            f"{'their' if many else 'its'} limit of {mib(kill.limit_bytes)} ({kill.mechanism})"
        )
    elif record.get("limit_bytes"):
        peak = record.get("peak_bytes")
        text = f"killed by Slurm for memory{where}: over its cgroup's limit of {mib(record['limit_bytes'])}"
        text += f" (peak {mib(peak)}, cgroup)" if peak else " (cgroup)"
    else:
        text = f"killed by Slurm for memory{where}: over its memory limit"
    if hit.declared_mib:
        text += f"; it declared {hit.declared_mib:g} MiB"
    else:
        text += "; no memory declared, so the partition's default applied: set resources.memory in the topology"
    return text


def unrecorded_end(
    replica: ReplicaStatus, started: bool, ending: Ending | None, slurm_state: str | None, hit: Hit
) -> None:
    """A replica whose task recorded no end, in a job that is over."""
    state = base_state(slurm_state)
    if ending is not None:
        replica.state, replica.reason, replica.message = ending.state, ending.reason, ending.message
    elif state in ENDED_BY_SLURM:
        replica.state = ReplicaState.STOPPED if state == "CANCELLED" else ReplicaState.FAILED
        replica.reason, replica.message = ENDED_BY_SLURM[state], _slurm_words(state, hit)
    elif started:
        replica.state, replica.reason = ReplicaState.LOST, "NoExitRecord"
        replica.message = f"its task ended without recording its exit (the job ended {state or 'unknown'})"
    else:
        replica.state, replica.reason = ReplicaState.FAILED, "NeverStarted"
        replica.message = f"its task never started (the job ended {state or 'unknown'}); see slurm/batch.out"
