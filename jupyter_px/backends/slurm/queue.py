"""One `squeue` for every Slurm run of a run store, however many are followed.

Each run has its own follower (its lifecycle owner, as on Kubernetes), but they do not each ask
slurmctld: they share a snapshot of the queue, `$PX_HOME/slurm/queue-<cluster>.json`. A follower
that finds the snapshot older than the poll interval takes `queue-<cluster>.lock` without
waiting; the one that gets it runs `squeue --json` once and writes the snapshot (atomically);
the others wait for that lock and read what it wrote. So N followed runs cost one `squeue` per
interval, not N, and a busy slurmctld (every user's notebook polls it) sees one client per
Jupyter server. `polls` and `readers` in the snapshot count them (the tests check it).

The snapshot keeps, of this user's jobs, what the followers read (state, reason, partition,
priority, nodes, times, exit codes, heterogeneous components), and of every pending job in the
cluster its partition and priority: a job's place in its partition's queue is the number of
pending jobs there that Slurm would consider first (higher priority, then lower job id), plus
one. Slurm 22.05's `squeue --json` lists every job whatever the filters, so one call answers
both.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import logging
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...processes import file_lock
from ...runstore import atomic_write_json
from .commands import SlurmCommandError, SlurmCommands
from .states import base_state

log = logging.getLogger(__name__)

#: The fields of a job the followers read.
KEPT = (
    "job_id",
    "het_job_id",
    "het_job_offset",
    "job_state",
    "state_reason",
    "state_description",
    "partition",
    "priority",
    "nodes",
    "start_time",
    "end_time",
    "submit_time",
    "time_limit",
    "exit_code",
    "derived_exit_code",
    "name",
    "batch_host",
    "restart_cnt",
    "array_job_id",
    "array_task_id",
    "array_task_string",
)


def slurm_reason(said: object) -> str:
    """Slurm's reason for a job's state, "" for none: a job the scheduler has not looked at yet
    says "None" (slurm/slurm.h.in `WAIT_NO_REASON`, src/common/slurm_protocol_defs.c
    `job_state_reason_string`, tag slurm-22-05-8-1), which is no reason to show."""
    reason = str(said or "")
    return "" if reason == "None" else reason


@dataclass(frozen=True)
class JobView:
    """A job as the latest snapshot saw it (a heterogeneous job's components together)."""

    job_id: int
    state: str
    reason: str
    partition: str
    nodes: str
    start_time: float | None
    time_limit_min: int | None
    exit_code: int | None
    position: int | None
    pending_in_partition: int | None
    #: how often Slurm restarted (requeued) the job: its attempt is this + 1 (`requeues.py`)
    restarts: int = 0


@dataclass(frozen=True)
class Snapshot:
    taken_at: float
    error: str | None
    jobs: dict[int, dict[str, Any]]
    pending: list[tuple[int, str, int]]

    def job(self, ref: int | str) -> JobView | None:
        """Job `ref` (a heterogeneous job by its leader, an array's task as `<array id>_<task>`),
        or None when the snapshot has no such job."""
        array_id, task = split_ref(ref)
        if task is not None:
            found = self._array_task(array_id, task)
            return self._view(found["job_id"], found, [found]) if found is not None else None
        parts = [j for j in self.jobs.values() if j.get("job_id") == array_id or (j.get("het_job_id") or 0) == array_id]
        if not parts:
            return None
        return self._view(array_id, next((j for j in parts if j.get("job_id") == array_id), parts[0]), parts)

    def _array_task(self, array_id: int, task: int) -> dict[str, Any] | None:
        """Task `task` of job array `array_id`: its own record once Slurm started it, else the
        array's pending record while that still holds the task (`array_task_string`, "2-9%2")."""
        pending = None
        for job in self.jobs.values():
            if job.get("array_job_id") != array_id:
                continue
            if job.get("array_task_id") == task:
                return job
            if job.get("array_task_id") is None and task in array_tasks(str(job.get("array_task_string") or "")):
                pending = job
        return pending

    def _view(self, job_id: int, leader: dict[str, Any], parts: list[dict[str, Any]]) -> JobView:
        state = base_state(leader.get("job_state"))
        nodes = ",".join(dict.fromkeys(str(j.get("nodes") or "") for j in parts if j.get("nodes")))
        position = total = None
        if state == "PENDING":
            partition, priority = str(leader.get("partition") or ""), int(leader.get("priority") or 0)
            position, total = self.position(job_id, partition, priority)
        start = leader.get("start_time")
        return JobView(
            job_id=job_id,
            state=state,
            reason=slurm_reason(leader.get("state_reason")),
            partition=str(leader.get("partition") or ""),
            nodes=nodes,
            start_time=float(start) if start and state != "PENDING" else None,
            time_limit_min=leader.get("time_limit") if isinstance(leader.get("time_limit"), int) else None,
            exit_code=leader.get("exit_code") if isinstance(leader.get("exit_code"), int) else None,
            position=position,
            pending_in_partition=total,
            restarts=int(leader.get("restart_cnt") or 0),
        )

    def component_ids(self, ref: int | str) -> dict[int, int] | None:
        """{component job id: its offset} of heterogeneous job `ref`; an array's task started has
        one, under its own job id (None: neither, or not seen)."""
        job_id, task = split_ref(ref)
        if task is not None:
            found = self._array_task(job_id, task)
            started = found is not None and found.get("array_task_id") == task
            return {int(found["job_id"]): 0} if started and found is not None else None
        parts = {
            int(j["job_id"]): int(j.get("het_job_offset") or 0)
            for j in self.jobs.values()
            if (j.get("het_job_id") or 0) == job_id and j.get("job_id")
        }
        return parts or None

    def position(self, job_id: int, partition: str, priority: int) -> tuple[int | None, int | None]:
        """(1-based place of the job among its partition's pending jobs, how many wait there)."""
        first = partition.split(",")[0]
        same = [(p, i) for i, part, p in self.pending if part.split(",")[0] == first]
        if not same:
            return None, None
        ahead = sum(1 for p, i in same if p > priority or (p == priority and i < job_id))
        return ahead + 1, len(same)


def split_ref(ref: int | str) -> tuple[int, int | None]:
    """`"5_3"` -> (5, 3): an array's task; `5` or `"5"` -> (5, None)."""
    head, _, task = str(ref).partition("_")
    return int(head), int(task) if task else None


def array_tasks(text: str) -> set[int]:
    """The task ids an array's record holds: `"2-9%2"`, `"0,4-6"`, `"0-15:4"` (sbatch(1) --array)."""
    out: set[int] = set()
    for part in text.split("%")[0].split(","):
        span, _, step = part.partition(":")
        first, _, last = span.partition("-")
        if first.strip().isdigit():
            out.update(range(int(first), int(last or first) + 1, int(step) if step.isdigit() and int(step) else 1))
    return out


def _cluster_key(slurm_conf: str | None) -> str:
    return hashlib.sha1((slurm_conf or "default").encode()).hexdigest()[:10]


def _me() -> tuple[int, str]:
    try:
        name = getpass.getuser()
    except (KeyError, OSError):
        name = str(os.getuid())
    return os.getuid(), name


def reduce(jobs: Iterable[dict[str, Any]], uid: int, user: str) -> tuple[dict[str, dict[str, Any]], list[list[Any]]]:
    """(this user's jobs by id, slimmed; every pending job's [id, partition, priority], leaders only)."""
    mine: dict[str, dict[str, Any]] = {}
    pending: list[list[Any]] = []
    for job in jobs:
        if base_state(job.get("job_state")) == "PENDING" and not job.get("het_job_offset"):
            job_id, priority = int(job.get("job_id") or 0), int(job.get("priority") or 0)
            pending.append([job_id, str(job.get("partition") or ""), priority])
        if job.get("user_id") == uid or job.get("user_name") == user:
            mine[str(job.get("job_id"))] = {key: job.get(key) for key in KEPT}
    return mine, pending


class QueueWatch:
    """The shared snapshot of one cluster's queue for the runs of one run store."""

    def __init__(self, home: Path, commands: SlurmCommands, max_age_s: float, reader: str = ""):
        folder = home / "slurm"
        folder.mkdir(parents=True, exist_ok=True)
        key = _cluster_key(commands.slurm_conf)
        self.path = folder / f"queue-{key}.json"
        self.lock_path = folder / f"queue-{key}.lock"
        self.commands = commands
        self.max_age_s = max_age_s
        self.reader = reader

    def _load(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None

    def read(self, newer_than: float = 0.0) -> Snapshot:
        """A snapshot at most `max_age_s` old and taken after `newer_than` (polled by whichever
        reader gets there first)."""
        data = self._load()
        if not self._fresh(data, newer_than):
            with file_lock.locked(self.lock_path):  # one reader polls; the others then read what it wrote
                data = self._load()
                if not self._fresh(data, newer_than):
                    data = self._poll(data)
        assert data is not None
        return Snapshot(
            taken_at=float(data.get("taken_at") or 0),
            error=data.get("error"),
            jobs={int(k): v for k, v in (data.get("jobs") or {}).items()},
            pending=[(int(i), str(p), int(q)) for i, p, q in data.get("pending") or []],
        )

    def _fresh(self, data: dict[str, Any] | None, newer_than: float) -> bool:
        if data is None:
            return False
        taken = float(data.get("taken_at") or 0)
        return taken >= newer_than and time.time() - taken < self.max_age_s

    def _poll(self, previous: dict[str, Any] | None) -> dict[str, Any]:
        """Run the one `squeue` and write the snapshot (the caller holds the lock)."""
        started = time.time()
        polls = int((previous or {}).get("polls") or 0) + 1
        readers = sorted(set((previous or {}).get("readers") or []) | ({self.reader} if self.reader else set()))
        try:
            uid, user = _me()
            mine, pending = reduce(self.commands.squeue(), uid, user)
            data: dict[str, Any] = {"taken_at": started, "error": None, "jobs": mine, "pending": pending}
        except SlurmCommandError as error:
            log.warning("squeue: %s", error)
            data = dict(previous or {"jobs": {}, "pending": []})
            data.update(taken_at=started, error=str(error))
        data.update(polls=polls, readers=readers[-64:])
        atomic_write_json(self.path, data)
        return data
