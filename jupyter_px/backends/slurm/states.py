"""Slurm's words for a job, and what they mean for a run: pure functions.

A Slurm user reads PENDING with a reason (Resources, Priority, Dependency, QOSMaxJobsPerUserLimit,
ReqNodeNotAvail, ...), RUNNING, then COMPLETED, FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY,
NODE_FAIL, PREEMPTED, BOOT_FAIL or DEADLINE (`squeue`/`sacct` JOB STATE CODES). The run store has
six states; the reasons and messages carry Slurm's words, so what the monitor says is what
`squeue` would have said: "Slurm job 42 waits in partition gpu's queue: 3rd (Priority)".
"""

from __future__ import annotations

from dataclasses import dataclass

from ...runstore import RunState
from ...runstore.models import Reason

#: Job states of a job that has not ended (squeue's base states, flags stripped).
ACTIVE = frozenset(
    {
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "SUSPENDED",
        "REQUEUED",
        "REQUEUE_HOLD",
        "REQUEUE_FED",
        "RESIZING",
        "SIGNALING",
        "STAGE_OUT",
        "STOPPED",
        "RESV_DEL_HOLD",
        "SPECIAL_EXIT",
    }
)
#: States in which the job holds its nodes and its tasks may run.
STARTED = frozenset({"CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "SIGNALING", "STAGE_OUT", "STOPPED"})

#: A job ended by Slurm (not by its tasks): the run's reason for it.
ENDED_BY_SLURM = {
    "TIMEOUT": "Timeout",
    "NODE_FAIL": "NodeFail",
    "PREEMPTED": "Preempted",
    "BOOT_FAIL": "BootFail",
    "DEADLINE": "Deadline",
    "OUT_OF_MEMORY": Reason.OOM_KILLED.value,
    "CANCELLED": "Cancelled",
}
#: What a replica still running when Slurm ended the job reads.
ENDED_BY_SLURM_WORDS = {
    "TIMEOUT": "stopped by Slurm at the job's time limit",
    "NODE_FAIL": "its node failed",
    "PREEMPTED": "the job was preempted",
    "BOOT_FAIL": "its node failed to boot",
    "DEADLINE": "the job reached its deadline",
    "OUT_OF_MEMORY": "the job ran out of memory",
    "CANCELLED": "the job was cancelled outside jupyter-px",
}


def base_state(state: str | None) -> str:
    """`CANCELLED by 0` -> CANCELLED, `RUNNING+...` -> RUNNING (flags and details stripped)."""
    return (state or "").split()[0].split("+")[0].upper() if state else ""


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def minutes_text(minutes: int | None) -> str | None:
    """Slurm's time limit (minutes) as Slurm prints it: `00:05:00`, `1-12:00:00`; None: unlimited."""
    if minutes is None or minutes <= 0 or minutes >= 0xFFFFFFFE:
        return None
    days, rest = divmod(int(minutes), 24 * 60)
    hours, mins = divmod(rest, 60)
    clock = f"{hours:02d}:{mins:02d}:00"
    return f"{days}-{clock}" if days else clock


def pending_message(job_id: int | str, reason: str, partition: str, position: int | None, ahead_of: int | None) -> str:
    where = f"partition {partition}'s queue" if partition else "the queue"
    place = f": {ordinal(position)}" + (f" of {ahead_of}" if ahead_of else "") if position else ""
    return f"Slurm job {job_id} is PENDING in {where}{place}" + (f" ({reason})" if reason else "")


def running_message(
    job_id: int | str, nodes: str, time_limit_min: int | None, started_at: float | None, now: float
) -> str:
    """`Slurm job 42 RUNNING on n[1-3]; 4 min left of 00:05:00`, the time left to the minute (so
    the status is rewritten once a minute, not on every poll)."""
    text = f"Slurm job {job_id} RUNNING" + (f" on {nodes}" if nodes else "")
    limit = minutes_text(time_limit_min)
    if limit and started_at and time_limit_min:
        left = max(0, int((started_at + time_limit_min * 60 - now) // 60))
        text += f"; {minutes_left(left)} left of {limit}"
    return text


def minutes_left(minutes: int) -> str:
    """`under a minute`, `4 min`, `3 h 12 min`, `364 d 23 h`."""
    if minutes < 1:
        return "under a minute"
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    return f"{hours} h {mins} min" if hours else f"{mins} min"


@dataclass(frozen=True)
class JobEnd:
    """How Slurm says a job ended, as a run's state, reason and message."""

    state: RunState
    reason: str
    message: str


def slurm_end(job_id: int | str, state: str, time_limit_min: int | None, cancelled_by: str | None) -> JobEnd | None:
    """The run's end when Slurm (not the run's own tasks) ended the job; None for COMPLETED and
    FAILED, whose meaning comes from the tasks' exit records."""
    state = base_state(state)
    if state == "CANCELLED":
        who = f" by {cancelled_by}" if cancelled_by else ""
        return JobEnd(RunState.STOPPED, "Cancelled", f"Slurm job {job_id} was CANCELLED{who}, outside jupyter-px")
    if state == "TIMEOUT":
        limit = minutes_text(time_limit_min)
        at = f" ({limit})" if limit else ""
        return JobEnd(RunState.FAILED, "Timeout", f"Slurm job {job_id} reached its time limit{at}: TIMEOUT")
    if state in ENDED_BY_SLURM:
        words = ENDED_BY_SLURM_WORDS[state]
        return JobEnd(RunState.FAILED, ENDED_BY_SLURM[state], f"Slurm job {job_id} ended {state}: {words}")
    return None
