"""What a submitted run keeps about its Slurm job, in its run directory.

`slurm.json` (written once by submit, right after sbatch answered) lets any process (the
follower, `stop`, another kernel, the Jupyter server's keeper) find the job again, on the same
cluster (`SLURM_CONF` as it was at submit). `slurm-stop` asks the follower to stop the run. The
tasks write their records under `slurm/job-<id>/` (see `task_entry.py`). Who follows the run is
not here: it is the run's owner in status.json (pid and creation time, recorded by its starter).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ...runstore import atomic_write_json
from ..followed import FollowerSpec

#: What a run directory holds for its job: the entry every task and the batch script run (copied
#: in), the scripts, the plan, the batch script's output.
ENTRY = "slurm/entry.py"
NODE_ENTRY = "slurm/node.py"
REQUEUE_ENTRY = "slurm/requeue.py"
#: `kill_requests.py`, which entry.py imports (beside it: first on its `sys.path`)
KILL_REQUESTS = "slurm/px_kill_requests.py"
NODE_SCRIPT = "slurm/node.sh"
JOB_SCRIPT = "slurm/job.sh"
TASK_SCRIPT = "slurm/task.sh"
PLAN_FILE = "slurm/plan.json"
BATCH_OUTPUT = "slurm/batch.out"
HANDLE_FILE = "slurm.json"
STOP_FILE = "slurm-stop"
#: The run's follower: its module, the handshake's files (`backends/followed.py`).
FOLLOWER = FollowerSpec(
    module="jupyter_px.backends.slurm.follower",
    handle=HANDLE_FILE,
    stop=STOP_FILE,
    log="slurm/follower.log",
    start_lock="slurm/.start.lock",
    lock="slurm/.follower.lock",
)


@dataclass(frozen=True)
class JobHandle:
    job_id: int
    slurm_conf: str | None  # SLURM_CONF when submitted (None: the system's configuration)
    submitted_at: float
    job_name: str
    #: the replicas in task order (SLURM_PROCID p is tasks[p])
    tasks: list[tuple[str, int]] = field(default_factory=list)
    components: list[int] = field(default_factory=list)
    #: where the tasks run and write when the run store is not on the nodes' filesystem (the
    #: `shared_dir` setting): their files are copied back into the run directory
    shared_run_dir: str | None = None
    #: MiB per CPU Slurm gives a replica that declares no memory (the partition's DefMemPerCPU),
    #: as the preflight read it; None: unknown or a whole node's
    default_mem_per_cpu_mib: float | None = None
    #: the run is task `array_task` of job array `job_id` (a sweep's trials as one array,
    #: `arrays.py`); None: a job of its own
    array_task: int | None = None
    #: the run is claim `claim` of the kept allocation in folder `allocation` (job `job_id`,
    #: `allocations.py`), its part of that job's batch output from `batch_offset`; None: a job of its own
    allocation: str | None = None
    claim: int | None = None
    batch_offset: int = 0

    @property
    def ref(self) -> str:
        """The job as Slurm's commands name it: `<id>`, or `<array id>_<task>` for an array's
        task (squeue, scontrol, scancel and sacct take both, pending or running)."""
        return str(self.job_id) if self.array_task is None else f"{self.job_id}_{self.array_task}"

    def save(self, run_dir: Path) -> None:
        atomic_write_json(run_dir / HANDLE_FILE, asdict(self))

    @classmethod
    def load(cls, run_dir: Path) -> JobHandle:
        fields = json.loads((run_dir / HANDLE_FILE).read_text())
        fields["tasks"] = [(str(role), int(index)) for role, index in fields.get("tasks") or []]
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in fields.items() if k in known})

    def work_dir(self, run_dir: Path) -> Path:
        """The directory the tasks use: the run's own, or its copy under `shared_dir`."""
        return Path(self.shared_run_dir) if self.shared_run_dir else run_dir

    def records_dir(self, run_dir: Path, restarts: int = 0) -> Path:
        """Where the tasks of the job's attempt write their records: `slurm/job-<ref>`, then
        `slurm/job-<ref>.<n>` once Slurm restarted it n times (a requeue keeps the job's id)."""
        return self.work_dir(run_dir) / "slurm" / (f"job-{self.ref}" + (f".{restarts}" if restarts else ""))
