"""`SlurmBackend`: a run is one Slurm job, submitted with sbatch from this machine (a login node).

A run owned by a detached follower (`backends/followed.py`: the owner, `observe`, `reconcile`
and the stop request are the shape every such backend shares). What is Slurm's own: `check` runs
the preflight (`sbatch --test-only`, the shared-filesystem probe); `submit` writes the job's files
into the run directory (`slurm/plan.json`, `job.sh`, `task.sh`, `entry.py`), submits `job.sh`,
records the job (`slurm.json`) and starts the follower; `stop` asks the follower (`slurm-stop`) to
end the job the way every end goes (SIGTERM to the tasks, the grace, then `scancel`) and waits
until the job has left Slurm's queue.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...processes import detached
from ...runstore import ReplicaState, RunStatus, atomic_write_json
from ...topology import Topology, parse_topology
from ...topology.export import headline
from ..base import BackendError, SubmitHandle, replica_to_kill
from ..followed import FollowedBackend, mark_stopped
from . import allocations, mirror, preflight
from .arrays import ArrayRefused, array_script, held_task, keeper
from .commands import SlurmCommandError, SlurmCommands
from .handle import (
    ENTRY,
    FOLLOWER,
    JOB_SCRIPT,
    KILL_REQUESTS,
    NODE_ENTRY,
    NODE_SCRIPT,
    PLAN_FILE,
    REQUEUE_ENTRY,
    TASK_SCRIPT,
    JobHandle,
)
from .job_control import JobControl
from .plan import JobPlan, job_plan, plan_document
from .script import job_name, job_script, node_script, task_script
from .settings import SlurmSettings, load_settings
from .stacks import take_stacks

#: Beyond the stop grace, how long `stop` waits for the job to leave the queue.
STOP_MARGIN_S = 30.0
#: Variables of this process the job does not inherit: a run's own (when submitted from inside
#: a replica) and the contract of another run. PX_HOME and the settings stay.
#: The GPUs of this machine are not the tasks': Slurm sets CUDA_VISIBLE_DEVICES for those it gives.
_DROPPED = (
    "PX_",
    "TF_CONFIG",
    "MASTER_ADDR",
    "MASTER_PORT",
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "DMLC_",
    "CUDA_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
)
_KEPT = ("PX_HOME", "PX_SLURM_", "PX_STOP_GRACE_S", "PX_COMPLETION_GRACE_S")


def job_environ(home: Path) -> dict[str, str]:
    """The environment sbatch passes to the job (`--export=ALL`, Slurm's default)."""
    env = {k: v for k, v in detached.importable_environ().items() if k.startswith(_KEPT) or not k.startswith(_DROPPED)}
    env["PX_HOME"] = str(home)
    env["PYTHONUNBUFFERED"] = "1"
    return env


@dataclass(frozen=True)
class _Prepared:
    """A run whose job files are written, before its job is submitted."""

    run_id: str
    run_dir: Path
    work: Path  # where its tasks read and write: the run directory or its copy under shared_dir
    shared: Path | None
    plan: JobPlan
    framework: str | None


class SlurmBackend(FollowedBackend[SlurmSettings]):
    """One Slurm job per run (the topology's `backend: slurm`)."""

    name = "slurm"
    follower = FOLLOWER
    #: MiB per CPU a replica that declares no memory gets, as the last check read it
    _default_mem_per_cpu: float | None = None

    def _load_settings(self) -> SlurmSettings:
        return load_settings()

    def _store_root(self) -> Path:
        return Path(self.settings.shared_dir) if self.settings.shared_dir else self.store.home

    def check(self, topology: Topology) -> None:
        _, self._default_mem_per_cpu = preflight.check(topology, self.settings, SlurmCommands(), self._store_root())

    def submit(self, run_id: str) -> SubmitHandle:
        prepared = self._prepare(run_id)
        commands = SlurmCommands(env=job_environ(self.store.home))
        if allocations.not_kept(prepared.plan, self.settings) is None:
            return self._submit_kept(prepared, commands)
        job_id = commands.sbatch(prepared.work / JOB_SCRIPT, cwd=str(prepared.work))
        try:
            return self._submitted(prepared, commands, job_id)
        except BaseException:
            with contextlib.suppress(SlurmCommandError):
                commands.scancel(job_id)
            raise

    def _submit_kept(self, prepared: _Prepared, commands: SlurmCommands) -> SubmitHandle:
        """The run on a kept allocation of its shape, idle, else on a new one (`allocations.py`)."""
        kept = allocations.Allocations(self._store_root(), self.store, commands)
        claim = kept.claim(prepared.run_id, prepared.work, self.settings, prepared.framework)
        try:
            return self._submitted(prepared, commands, claim.job_id, claim=claim)
        except BaseException:
            allocations.signal_run(claim.folder, claim.seq, "KILL")
            raise

    def submit_array(self, run_ids: list[str], concurrency: int, label: str) -> list[SubmitHandle]:
        """The runs as the tasks of one job array, at most `concurrency` running at once: one
        sbatch, one line in squeue (`arrays.py`). ArrayRefused when their jobs differ in shape
        (or one is heterogeneous): they are then submitted one by one, as ever."""
        if not self.settings.job_arrays:
            raise ArrayRefused("the Slurm setting job_arrays is false")
        prepared = [self._prepare(run_id) for run_id in run_ids]
        arrays = self._store_root() / "slurm" / "arrays"
        arrays.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=arrays))  # the nodes read it: under the store
        try:
            script = array_script(folder, [p.work for p in prepared], concurrency, job_name(label))
        except ArrayRefused:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        commands = SlurmCommands(env=job_environ(self.store.home))
        array_id = commands.sbatch(script, cwd=str(folder))
        handles: list[SubmitHandle] = []
        try:  # the tasks Slurm holds back get their followers when they start (`reconcile`)
            for task, one in enumerate(prepared):
                handles.append(self._submitted(one, commands, array_id, task, follow=task < concurrency))
        except BaseException:
            with contextlib.suppress(SlurmCommandError):
                commands.scancel(array_id)
            raise
        return handles

    def _prepare(self, run_id: str) -> _Prepared:
        """The run's job files, written where its tasks will read them (`slurm/` of the run
        directory, or of its copy under `shared_dir`)."""
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
        document = plan_document(topology, run_id, plan, settings.rendezvous_timeout_s, settings.checkpoint_grace_s)
        atomic_write_json(work / PLAN_FILE, document)
        (work / JOB_SCRIPT).write_text(job_script(run_id, work, plan, settings, headline(topology)))
        (work / TASK_SCRIPT).write_text(task_script(work, plan, settings))
        (work / NODE_SCRIPT).write_text(node_script(work, settings))
        shutil.copyfile(Path(__file__).with_name("task_entry.py"), work / ENTRY)
        shutil.copyfile(Path(__file__).with_name("node_entry.py"), work / NODE_ENTRY)
        shutil.copyfile(Path(__file__).with_name("requeue_entry.py"), work / REQUEUE_ENTRY)
        shutil.copyfile(Path(__file__).with_name("kill_requests.py"), work / KILL_REQUESTS)
        return _Prepared(run_id, run_dir, work, shared, plan, topology.framework)

    def _submitted(
        self,
        prepared: _Prepared,
        commands: SlurmCommands,
        job_id: int,
        array_task: int | None = None,
        follow: bool = True,
        claim: allocations.Claim | None = None,
    ) -> SubmitHandle:
        """Record the run's job (`slurm.json`) and start its follower (not yet, `follow=False`:
        a task the array holds back, kept by whoever keeps the run until it starts). `claim`: the
        run's place on a kept allocation, whose job it shares."""
        plan = prepared.plan
        handle = JobHandle(
            job_id=job_id,
            slurm_conf=commands.slurm_conf,
            submitted_at=time.time(),
            job_name=job_name(prepared.run_id),
            tasks=list(plan.tasks),
            components=[len(c.replicas) for c in plan.components],
            shared_run_dir=str(prepared.shared) if prepared.shared else None,
            default_mem_per_cpu_mib=self._default_mem_per_cpu,
            array_task=array_task,
            allocation=str(claim.folder) if claim else None,
            claim=claim.seq if claim else None,
            batch_offset=claim.batch_offset if claim else 0,
        )
        with self.starting(prepared.run_dir):  # a keeper that sees the handle waits for the owner
            handle.save(prepared.run_dir)
            status = RunStatus.initial(prepared.run_id, plan.tasks)
            status.message = f"Slurm job {handle.ref} submitted"
            if claim is not None:
                kept = (
                    "a new allocation kept for the next runs" if claim.new else "the allocation kept from a run before"
                )
                status.message = f"Slurm job {handle.ref} submitted ({kept})"
            if not follow:  # held back: kept by this process (the sweep's controller) until it starts
                status.owner = keeper()
            self.store.write_status(status)
            pid = self.start_follower(prepared.run_dir) if follow else None
        return SubmitHandle(prepared.run_id, self.name, {"job_id": handle.ref, "follower_pid": pid})

    def reconcile(self, run_id: str) -> RunStatus:
        """A task that its job array still holds back needs no follower (a sweep of 500 trials
        would start 500): the keeper (the sweep's controller, every half second) writes what the
        queue says of it and owns it meanwhile; once Slurm starts the task, its follower."""
        root = self.store.paths(run_id).root
        if (root / FOLLOWER.handle).exists():
            handle = JobHandle.load(root)
            if handle.array_task is not None:
                with self.starting(root):
                    held = held_task(self.store, run_id, handle, self.settings.poll_interval_s)
                if held is not None:
                    return held
        return super().reconcile(run_id)

    def stacks(self, run_id: str) -> dict[str, Any]:
        """Every running replica's stacks (`stacks.take_stacks`)."""
        root = self.store.paths(run_id).root
        try:
            handle = JobHandle.load(root)
        except (OSError, ValueError) as error:
            raise BackendError(f"run {run_id} has no Slurm job to ask: {error}") from None
        status = self.store.status(run_id)
        targets = {r.key: r.pid for r in status.replicas if r.state == ReplicaState.RUNNING}
        return take_stacks(root, run_id, handle, targets)

    def kill(self, run_id: str, role: str, index: int, signum: int) -> str:
        """One running replica ended on purpose, on its node (`kill_requests.py`): its task sends it
        `signum`; the follower then applies the run's policies (a requeue while retries are left)."""
        from .kill_requests import answered, request

        root = self.store.paths(run_id).root
        replica = replica_to_kill(self.store.status(run_id), role, index)
        handle = JobHandle.load(root)
        attempts = sorted(handle.records_dir(root).parent.glob(f"job-{handle.ref}*"), key=_restarts)
        if not attempts:
            raise BackendError(f"run {run_id}: job {handle.ref} has not started its tasks")
        path = request(str(attempts[-1]), replica.key, signum)
        if not answered(path):
            raise BackendError(f"{replica.key} of run {run_id} did not take the signal: it has just ended")
        node = (replica.address or "").split(":")[0]
        return f"sent {signal.Signals(signum).name} to {replica.key} of run {run_id} (on node {node})"

    def stop(self, run_id: str, timeout: float | None = None) -> None:
        """Stop the run's job (SIGTERM to its tasks, the grace, then scancel) and wait until
        nothing of it is left in Slurm's queue; the run ends Stopped unless it had finished."""
        root = self.store.paths(run_id).root
        status = self.store.status(run_id)
        if status.state.finished and not (root / FOLLOWER.handle).exists():
            return
        if not status.state.finished:
            self.request_stop(run_id)
            self.follow(run_id)
        wait = timeout if timeout is not None else self.settings.stop_grace_s + STOP_MARGIN_S
        deadline = time.monotonic() + wait
        self.await_owner(run_id, deadline)
        handle = JobHandle.load(root) if (root / FOLLOWER.handle).exists() else None
        if handle is None:
            return
        commands = SlurmCommands(handle.slurm_conf)
        control = JobControl(run_id, handle, commands, handle.work_dir(root))
        status = self.store.status(run_id)
        if not status.state.finished:  # no follower could do it: the status is ours to finish
            control.signal()
            mark_stopped(status)
            self.store.write_status(status)
        if control.kept is not None:  # the allocation stays: its servers end the run alone
            while not control.ended() and time.monotonic() < deadline:
                time.sleep(0.1)
            return
        self._wait_out_of_queue(commands, handle.ref, deadline)

    def _wait_out_of_queue(self, commands: SlurmCommands, job_id: int | str, deadline: float) -> None:
        """Until `scontrol show job` no longer shows the job in an active state."""
        if not commands.left_queue(job_id, deadline + 10 - time.monotonic()):
            raise BackendError(f"Slurm job {job_id} is still in the queue after the stop; see `squeue -j {job_id}`")


def _restarts(folder: Path) -> int:
    """`job-<id>.<n>` -> n (the attempt after n requeues), `job-<id>` -> 0."""
    suffix = folder.name.rpartition(".")[2]
    return int(suffix) if "." in folder.name and suffix.isdigit() else 0
