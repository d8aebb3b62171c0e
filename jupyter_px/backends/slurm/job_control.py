"""What the follower does to a run's job, and how it knows the job is over: `scancel` and the
queue for a job of its own; for a run on a kept allocation (`allocations.py`), a signal to its
servers for this run alone and their word that it has ended (the allocation's job goes on).
"""

from __future__ import annotations

import logging
from pathlib import Path

from . import allocations
from .commands import SlurmCommandError, SlurmCommands
from .handle import BATCH_OUTPUT, JobHandle
from .queue import JobView, Snapshot
from .states import ACTIVE, base_state

log = logging.getLogger(__name__)

#: Once every task has ended, how long the job gets to end by itself before it is cancelled.
JOB_END_WAIT_S = 5.0


class JobControl:
    def __init__(self, run_id: str, handle: JobHandle, commands: SlurmCommands, work: Path):
        self.run_id, self.handle, self.commands, self.work = run_id, handle, commands, work
        self.kept = Path(handle.allocation) if handle.allocation and handle.claim is not None else None

    @property
    def batch_output(self) -> Path:
        """Where Slurm writes what it says of the run's tasks: the job's output, or the allocation's."""
        return self.kept / "batch.out" if self.kept is not None else self.work / BATCH_OUTPUT

    @property
    def batch_offset(self) -> int:
        return self.handle.batch_offset if self.kept is not None else 0

    def keep_output(self) -> None:
        """On a kept allocation: the run's part of its batch output, copied into the run's own
        `slurm/batch.out` (the allocation's folder goes once it has ended)."""
        if self.kept is not None:
            allocations.copy_output(self.kept, self.handle.batch_offset, self.work / BATCH_OUTPUT)

    def signal(self, signal: str | None = None) -> None:
        """`signal` (TERM) to the run's tasks, or (None) their end: the job's `scancel`, or on a
        kept allocation the servers' signal to this run's processes."""
        if self.kept is not None:
            allocations.signal_run(self.kept, self.handle.claim or 0, signal or "KILL")
            if signal is not None or allocations.started(self.kept):
                return  # (an allocation not started yet was made for this run alone: it goes with it)
        try:
            self.commands.scancel(self.handle.ref, signal=signal)
        except SlurmCommandError as error:
            log.warning("run %s: scancel %s: %s", self.run_id, self.handle.ref, error)

    def ended(self) -> bool:
        """Whether nothing of the run is left: its job has left the queue, or on a kept
        allocation, its servers have ended the run (or the allocation has ended)."""
        if self.kept is not None and allocations.run_over(self.kept, self.handle.claim or 0):
            return True
        try:
            return self.commands.left_queue(self.handle.ref, 0)  # one look
        except SlurmCommandError:
            return False

    def over(self, job: JobView | None, snapshot: Snapshot) -> str | None:
        """The job's final state once it has left Slurm's active states ("" when unknown), else
        None. On a kept allocation, also COMPLETED once its servers have ended the run."""
        if self.kept is not None and allocations.run_over(self.kept, self.handle.claim or 0):
            return job.state if job is not None and job.state not in ACTIVE else "COMPLETED"
        if job is not None:
            return job.state if job.state not in ACTIVE else None
        if snapshot.taken_at < self.handle.submitted_at + 1.0:
            return None  # taken before the job existed
        try:
            shown = self.commands.show_job(self.handle.ref)
        except SlurmCommandError as error:
            log.info("run %s: scontrol show job: %s", self.run_id, error)
            return None
        if shown:
            state = base_state(shown[0].get("JobState"))
            return state if state not in ACTIVE else None
        return self.accounted_state() or ""

    def accounted_state(self) -> str | None:
        """The job's state as `sacct` has it (`CANCELLED by 1000`), None without accounting."""
        try:
            return self.commands.sacct_state(self.handle.ref)
        except SlurmCommandError:
            return None

    def cancelled_by(self) -> str | None:
        state = self.accounted_state() or ""
        if not state.upper().startswith("CANCELLED BY "):
            return None
        uid = state.split()[-1]
        try:
            import pwd

            return f"{pwd.getpwuid(int(uid)).pw_name} (uid {uid})"
        except (KeyError, ValueError):
            return f"uid {uid}"

    def see_out(self) -> None:
        """Every task has ended: the batch script ends with its `srun`. Wait for the job to leave
        the queue (its epilog, COMPLETING, included), and cancel it if it has not soon (a setup
        line that hangs, say), then wait for that. A kept allocation stays for the next run."""
        if self.kept is not None:
            return
        try:
            if not self.commands.left_queue(self.handle.ref, JOB_END_WAIT_S):
                log.info("run %s: every task ended but job %s did not; cancelling it", self.run_id, self.handle.ref)
                self.signal()
                self.commands.left_queue(self.handle.ref, JOB_END_WAIT_S)
        except SlurmCommandError:
            return
