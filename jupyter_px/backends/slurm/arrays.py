"""Runs of one shape as the tasks of one Slurm job array: a sweep's trials in one `sbatch`.

A sweep of 40 trials submitted one job each is 40 lines in everyone's `squeue` and 40 jobs for
the scheduler to consider; sites ask for job arrays instead (sbatch(1) `--array=0-39%4`: one
record, at most 4 tasks running, the rest PENDING with reason `JobArrayTaskLimit`). Each run
keeps everything of its own: its run directory, its `job.sh` (written as for a job of its own),
its follower, its records. The array's batch script only picks the run of its task:

    #SBATCH --array=0-<n-1>%<concurrency>
    #SBATCH --output=<folder>/tasks/%a/slurm/batch.out    (each run's own batch output)
    #SBATCH <the runs' options, which must be the same>
    cd <folder>/tasks/$SLURM_ARRAY_TASK_ID && exec bash slurm/job.sh

`<folder>/tasks/<i>` is a link to task i's run directory (or its copy under `shared_dir`), so
`%a` in `--output` reaches it. A run is then named to Slurm as `<array id>_<task>` (`JobHandle.ref`;
squeue, scontrol, scancel and sacct take that form, pending or running), and its tasks write
their records under `slurm/job-<array id>_<task>` (`task_entry.leader_job_id`).

A task Slurm holds back has no follower yet (`held_task`): its run is owned by whoever keeps it
(the sweep's controller keeps its trials every half second), which writes what the shared queue
snapshot says of it; the follower starts when the task does, so a sweep of 500 trials has
`concurrency` followers, not 500.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from ...processes import detached
from ...runstore import RunStatus, RunStore
from ...runstore.models import RunOwner
from ..base import BackendError
from ..followed import owner_alive
from .commands import SlurmCommandError, SlurmCommands
from .handle import BATCH_OUTPUT, JOB_SCRIPT, JobHandle
from .queue import QueueWatch
from .states import pending_message

#: The options of a run's job.sh that are its own, not its shape's: the array sets them itself.
_OWN = ("--job-name=", "--output=")


class ArrayRefused(BackendError):
    """These runs cannot be one array (their jobs differ in shape, or one is heterogeneous)."""


def shape_options(job_script: str) -> list[str]:
    """The `#SBATCH` lines of a run's job.sh that say its shape (all but its name and output)."""
    return [
        line
        for line in job_script.splitlines()
        if line.startswith("#SBATCH ") and not line.removeprefix("#SBATCH ").startswith(_OWN)
    ]


def array_script(folder: Path, works: Sequence[Path], concurrency: int, name: str) -> Path:
    """Write `<folder>/array.sh` and the task links for the runs whose job files are in `works`
    (in task order); its path. ArrayRefused when their options differ."""
    if not works:
        raise ArrayRefused("no runs to submit")
    options = [shape_options((work / JOB_SCRIPT).read_text()) for work in works]
    if any("#SBATCH hetjob" in found for found in options):
        raise ArrayRefused("a heterogeneous job cannot be a task of a job array (sbatch(1))")
    differ = [i for i, found in enumerate(options) if found != options[0]]
    if differ:
        raise ArrayRefused(f"task {differ[0]}'s job differs from task 0's in its options: not one shape")
    tasks = folder / "tasks"
    tasks.mkdir(parents=True, exist_ok=True)
    for index, work in enumerate(works):
        (tasks / str(index)).symlink_to(work, target_is_directory=True)
    limit = f"%{concurrency}" if 0 < concurrency < len(works) else ""
    lines = [
        "#!/bin/bash",
        f"# jupyter-px: {len(works)} runs as one job array ({name}); task i runs the run in tasks/i",
        f"#SBATCH --job-name={name}",
        f"#SBATCH --array=0-{len(works) - 1}{limit}",
        f"#SBATCH --output={shlex.quote(str(tasks))}/%a/{BATCH_OUTPUT}",
        *options[0],
        f'cd {shlex.quote(str(tasks))}/"$SLURM_ARRAY_TASK_ID" || exit 1',
        f"exec bash {JOB_SCRIPT}",
    ]
    script = folder / "array.sh"
    script.write_text("\n".join(lines) + "\n")
    return script


def keeper() -> RunOwner:
    """This process as the owner of runs it keeps while their array holds them back."""
    me = detached.ProcessIdentity.current()
    return RunOwner(kind="keeper", pid=me.pid, started_at=me.started_at)


def held_task(store: RunStore, run_id: str, handle: JobHandle, poll_s: float) -> RunStatus | None:
    """Keep run `run_id`, task `handle.array_task` of its array, while Slurm holds it PENDING in
    the array's queue: its status says so (Slurm's reason, its place) and this process owns it
    (a `keeper`). None once it needs its follower: started, ended, gone from the queue, or already
    followed. The caller holds `starting` (no follower starts meanwhile)."""
    status = store.status(run_id)
    followed = status.owner is not None and status.owner.kind != "keeper" and owner_alive(status, store.home)
    if status.state.finished or followed:
        return None
    try:
        job = QueueWatch(store.home, SlurmCommands(handle.slurm_conf), poll_s, reader=run_id).read().job(handle.ref)
    except SlurmCommandError:
        return None  # the follower knows how to wait for slurmctld
    if job is None or job.state != "PENDING" or job.restarts:
        return None
    owner = keeper()
    message = pending_message(handle.ref, job.reason, job.partition, job.position, job.pending_in_partition)
    if (status.owner, status.message) != (owner, message):
        status.owner, status.message = owner, message
        store.write_status(status)
    return status
