"""`SlurmBackend`: a run is one Slurm job, submitted with sbatch from this machine (a login node).

`check` runs the preflight (`sbatch --test-only`, the shared-filesystem probe). `submit` writes
the job's files into the run directory (`slurm/plan.json`, `job.sh`, `task.sh`, `entry.py`),
submits `job.sh`, records the job (`slurm.json`) and starts the run's detached follower, recorded
as the run's owner before it may run; from then on the follower alone writes the run's status.
`observe` reads the store and reports "nobody is following this run" when the follower is gone;
`reconcile` (an explicit keeper's step) starts one again. `stop` asks the follower (`slurm-stop`)
to end the job the way every end goes (SIGTERM to the tasks, the grace, then `scancel`) and waits
until the job has left Slurm's queue.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

from ... import detached
from ...runstore import RunState, RunStatus, atomic_write_json
from ...runstore.models import Reason, RunOwner
from ...topology import Topology, parse_topology
from ...topology.export import headline
from ..base import Backend, BackendError, Observation, SubmitHandle
from . import mirror, preflight
from .commands import SlurmCommandError, SlurmCommands
from .handle import FOLLOWER_LOG, HANDLE_FILE, START_LOCK, STOP_FILE, JobHandle
from .plan import job_plan, plan_document
from .script import ENTRY, JOB_SCRIPT, PLAN_FILE, TASK_SCRIPT, job_name, job_script, task_script
from .settings import SlurmSettings, load_settings
from .states import ACTIVE, base_state

FOLLOWER_MODULE = "jupyter_px.backends.slurm.follower"
#: Beyond the stop grace, how long `stop` waits for the job to leave the queue.
STOP_MARGIN_S = 30.0
#: Variables of this process the job does not inherit: a run's own (when submitted from inside
#: a replica) and the contract of another run. PX_HOME and the settings stay.
_DROPPED = ("PX_", "TF_CONFIG", "MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "DMLC_")
_KEPT = ("PX_HOME", "PX_SLURM_", "PX_STOP_GRACE_S", "PX_COMPLETION_GRACE_S")


def follower_alive(status: RunStatus) -> bool:
    owner = status.owner
    return owner is not None and detached.ProcessIdentity(owner.pid, owner.started_at).alive()


def job_environ(home: Path) -> dict[str, str]:
    """The environment sbatch passes to the job (`--export=ALL`, Slurm's default)."""
    env = {k: v for k, v in detached.importable_environ().items() if k.startswith(_KEPT) or not k.startswith(_DROPPED)}
    env["PX_HOME"] = str(home)
    env["PYTHONUNBUFFERED"] = "1"
    return env


@contextlib.contextmanager
def _starting(run_dir: Path) -> Iterator[None]:
    """One starter of a run's follower at a time."""
    (run_dir / "slurm").mkdir(exist_ok=True)
    with open(run_dir / START_LOCK, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


class SlurmBackend(Backend):
    """One Slurm job per run (the topology's `backend: slurm`)."""

    name = "slurm"

    def __init__(self, store=None, settings: SlurmSettings | None = None):
        super().__init__(store)
        self._settings = settings

    @property
    def settings(self) -> SlurmSettings:
        if self._settings is None:
            self._settings = load_settings()
        return self._settings

    def _store_root(self) -> Path:
        return Path(self.settings.shared_dir) if self.settings.shared_dir else self.store.home

    def check(self, topology: Topology) -> None:
        preflight.check(topology, self.settings, SlurmCommands(), self._store_root())

    def submit(self, run_id: str) -> SubmitHandle:
        record = self.store.record(run_id)
        topology = parse_topology(record.topology)
        if record.workdir and not Path(record.workdir).is_dir():
            raise BackendError(f"workdir {record.workdir!r} of run {run_id} is not a directory")
        run_dir = self.store.paths(run_id).root.resolve()
        settings = self.settings
        shared = Path(settings.shared_dir).resolve() / "runs" / run_id if settings.shared_dir else None
        work = shared or run_dir
        if shared is not None:
            mirror.prepare(run_dir, shared)
        plan = job_plan(topology)
        (work / "slurm").mkdir(exist_ok=True)
        (run_dir / "slurm").mkdir(exist_ok=True)
        document = plan_document(topology, run_id, plan, settings.rendezvous_timeout_s)
        atomic_write_json(work / PLAN_FILE, document)
        (work / JOB_SCRIPT).write_text(job_script(run_id, work, plan, settings, headline(topology)))
        (work / TASK_SCRIPT).write_text(task_script(work, plan, settings))
        shutil.copyfile(Path(__file__).with_name("task_entry.py"), work / ENTRY)
        commands = SlurmCommands(env=job_environ(self.store.home))
        job_id = commands.sbatch(work / JOB_SCRIPT, cwd=str(work))
        try:
            handle = JobHandle(
                job_id=job_id,
                slurm_conf=commands.slurm_conf,
                submitted_at=time.time(),
                job_name=job_name(run_id),
                tasks=list(plan.tasks),
                components=[len(c.replicas) for c in plan.components],
                shared_run_dir=str(shared) if shared else None,
            )
            handle.save(run_dir)
            status = RunStatus.initial(run_id, plan.tasks)
            status.message = f"Slurm job {job_id} submitted"
            self.store.write_status(status)
            with _starting(run_dir):
                pid = self._start_follower(run_dir)
        except BaseException:
            with contextlib.suppress(SlurmCommandError):
                commands.scancel(job_id)
            raise
        return SubmitHandle(run_id, self.name, {"job_id": job_id, "follower_pid": pid})

    def _start_follower(self, run_dir: Path) -> int:
        env = detached.importable_environ()
        env["PX_HOME"] = str(self.store.home)
        with detached.start(
            FOLLOWER_MODULE, [str(run_dir)], log_path=run_dir / FOLLOWER_LOG, cwd=run_dir, env=env
        ) as follower:
            status = self.store.status(run_dir.name)
            status.owner = RunOwner(kind="follower", pid=follower.identity.pid, started_at=follower.identity.started_at)
            self.store.write_status(status)
            follower.go()
        return follower.pid

    def observe(self, run_id: str) -> Observation:
        """The stored status, and "nobody is following this run" when an unfinished run's
        follower is gone. A pure read."""
        status = self.store.status(run_id)
        if status.state.finished or follower_alive(status):
            return Observation(status)
        status = self.store.status(run_id)  # it may have written its final status just before exiting
        if status.state.finished:
            return Observation(status)
        return Observation(status, "nobody is following this run")

    def follow(self, run_id: str) -> int | None:
        """Start the run's follower again if it is gone and the run is unfinished; its pid, or None."""
        root = self.store.paths(run_id).root
        if not (root / HANDLE_FILE).exists():
            return None
        with _starting(root):
            if self.observe(run_id).owner_problem is None:
                return None
            return self._start_follower(root.resolve())

    def reconcile(self, run_id: str) -> RunStatus:
        self.follow(run_id)
        return self.store.status(run_id)

    def stop(self, run_id: str, timeout: float | None = None) -> None:
        """Stop the run's job (SIGTERM to its tasks, the grace, then scancel) and wait until
        nothing of it is left in Slurm's queue; the run ends Stopped unless it had finished."""
        root = self.store.paths(run_id).root
        status = self.store.status(run_id)
        if status.state.finished and not (root / HANDLE_FILE).exists():
            return
        if not status.state.finished:
            atomic_write_json(root / STOP_FILE, {"requested_at": time.time(), "by_pid": os.getpid()})
            self.follow(run_id)
        wait = timeout if timeout is not None else self.settings.stop_grace_s + STOP_MARGIN_S
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            status = self.store.status(run_id)
            if status.state.finished or not follower_alive(status):
                break
            time.sleep(0.1)
        handle = JobHandle.load(root) if (root / HANDLE_FILE).exists() else None
        if handle is None:
            return
        commands = SlurmCommands(handle.slurm_conf)
        status = self.store.status(run_id)
        if not status.state.finished:  # no follower could do it: the status is ours to finish
            commands.scancel(handle.job_id)
            _mark_stopped(status)
            self.store.write_status(status)
        self._wait_out_of_queue(commands, handle.job_id, deadline)

    def _wait_out_of_queue(self, commands: SlurmCommands, job_id: int, deadline: float) -> None:
        """Until `scontrol show job` no longer shows the job in an active state."""
        while time.monotonic() < deadline + 10:
            shown = commands.show_job(job_id)
            if not shown or all(base_state(part.get("JobState")) not in ACTIVE for part in shown):
                return
            time.sleep(0.2)
        raise BackendError(f"Slurm job {job_id} is still in the queue after the stop; see `squeue -j {job_id}`")


def _mark_stopped(status: RunStatus) -> None:
    now = time.time()
    status.state, status.reason, status.message = RunState.STOPPED, Reason.STOPPED_BY_USER, "stopped on request"
    status.finished_at, status.owner = now, None
    for replica in status.replicas:
        if replica.state.value not in ("Succeeded", "Failed", "Lost", "Stopped"):
            replica.state, replica.finished_at = replica.state.__class__("Stopped"), now
            replica.reason = Reason.STOPPED_BY_USER
