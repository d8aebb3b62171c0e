"""Kept allocations: a run's Slurm job kept, warm, for the next run of the same shape.

A user on a Slurm cluster who runs a cell again and again keeps an allocation (`salloc`) and
starts each try as a step in it: no queue, no scheduler cycle, no interpreter that imports the
framework again. This is that, for a notebook, and an option (the Slurm setting
`keep_allocation_s`: how long an allocation stays idle after its last run). With it, a run goes to
an allocation of its shape (its `#SBATCH` options, the `setup` lines, the interpreter and the
framework's preload: `shape_key`) that is running and idle, or to a new one:

    <store>/slurm/allocations/<shape key>-<suffix>/
        allocation.json   what its servers preload, how long they stay idle; job.json: its job id
        job.sh            #SBATCH <the run's options>; setup; srun one server per node
        batch.out         the job's output (Slurm's kill messages; a run's part is copied to the run)
        server.py ...     the node servers (`alloc_server.py`), beside entry.py and node.py
        claims/<n>.json   the allocation's n-th run (its run id and directory), or its close
        claims/<n>.signal TERM or KILL for that run (a stop), claims/<n>.done-<node> once ended
        nodes/<node>      each server's heartbeat; servers.json: how many there are

A claim is made whole or not at all (a link of a written file: `os.link` refuses an existing
name), so the login node's claim and the leader server's close (after `idle_s` without a run)
can race for the same number and exactly one wins: a run never lands on an allocation that is
going away. The run's own `slurm.json` names its allocation and claim (`JobHandle.allocation`);
its follower reads the job's state in the queue as for a job of its own, and ends or stops
only its run (`job_control.py`), never the allocation.

Not kept (a job of its own, as without the setting): a heterogeneous job, GPUs (a task per
replica, bound to its GPUs by Slurm), `launcher: task`, and runs with retries (a requeue would
run the allocation's script again).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ...runstore import RunStore, atomic_write_json
from ..preload import BASE_PRELOAD, FRAMEWORK_PRELOAD
from .arrays import shape_options
from .commands import SlurmCommandError, SlurmCommands
from .handle import JOB_SCRIPT
from .plan import JobPlan
from .script import node_launched
from .settings import SlurmSettings
from .states import base_state

#: Where a run store keeps its allocations.
ALLOCATIONS = Path("slurm") / "allocations"
#: The files of the run's job an allocation's nodes run (copied in from this package).
SERVED_FILES = {
    "alloc_server.py": "server.py",
    "task_entry.py": "entry.py",
    "node_entry.py": "node.py",
    "kill_requests.py": "px_kill_requests.py",
}
#: A server whose heartbeat is older than this is taken for gone (it writes one every second).
HEARTBEAT_STALE_S = 5.0
#: An allocation closing within this long is not given a new run.
CLOSING_MARGIN_S = 5.0


def not_kept(plan: JobPlan, settings: SlurmSettings) -> str | None:
    """Why a run of `plan` gets a job of its own despite `keep_allocation_s`, or None."""
    if not settings.keep_allocation_s:
        return "keep_allocation_s is 0"
    if plan.heterogeneous:
        return "a heterogeneous job is not kept"
    if plan.max_retries:
        return "a run with retries is not kept (a requeue runs the job's script again)"
    if not node_launched(plan, settings):
        return "only node-launched jobs (no GPUs, launcher: node) are kept"
    return None


def shape_key(job_script: str, settings: SlurmSettings, framework: str | None) -> str:
    """What two runs must share to run on one allocation: the job's options, the setup lines, the
    interpreter and the framework preloaded."""
    text = json.dumps([shape_options(job_script), settings.setup, settings.interpreter, framework or ""])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Claim:
    """A run's place on an allocation."""

    folder: Path
    job_id: int
    seq: int
    batch_offset: int  # where the run's part of the allocation's batch output begins
    new: bool  # the allocation was submitted for this run


def _claims(folder: Path) -> Path:
    return folder / "claims"


def _numbers(folder: Path) -> list[int]:
    names = os.listdir(_claims(folder)) if _claims(folder).is_dir() else []
    return sorted(int(name[:-5]) for name in names if name.endswith(".json") and name[:-5].isdigit())


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def take_number(folder: Path, record: dict) -> int | None:
    """Write `record` as the allocation's next claim; its number, or None once it is closed."""
    claims = _claims(folder)
    fd, tmp = tempfile.mkstemp(dir=claims, prefix=".claim-")
    with os.fdopen(fd, "w") as handle:
        json.dump(record, handle)
    try:
        while True:
            numbers = _numbers(folder)
            if numbers and _read(claims / f"{numbers[-1]}.json").get("closed"):
                return None
            seq = numbers[-1] + 1 if numbers else 0
            try:
                os.link(tmp, claims / f"{seq}.json")
                return seq
            except FileExistsError:
                continue  # the leader's close or another claim took it: look again
    finally:
        os.unlink(tmp)


class Allocations:
    """The kept allocations of one run store (`root`: the store, or the `shared_dir` the nodes see)."""

    def __init__(self, root: Path, store: RunStore, commands: SlurmCommands):
        self.folder, self.store, self.commands = root / ALLOCATIONS, store, commands

    def claim(self, run_id: str, work: Path, settings: SlurmSettings, framework: str | None) -> Claim:
        """A place for run `run_id` (its job files in `work`): on an idle allocation of its shape,
        else on a new one (submitted here). Ended allocations are cleared away meanwhile."""
        key = shape_key((work / JOB_SCRIPT).read_text(), settings, framework)
        self.folder.mkdir(parents=True, exist_ok=True)
        record = {"run_id": run_id, "work": str(work), "at": time.time()}
        for folder in sorted(self.folder.glob(f"{key}-*")):
            job_id = self._idle(folder)
            if job_id is None:
                continue
            offset = _size(folder / "batch.out")
            seq = take_number(folder, record)
            if seq is not None:
                return Claim(folder, job_id, seq, offset, new=False)
        return self._new(key, record, work, settings, framework)

    def _idle(self, folder: Path) -> int | None:
        """The allocation's job id when it can take a run now: its job runs, every server beats,
        none is about to close, and its last run has finished. Cleared away once it has ended."""
        job = _read(folder / "job.json").get("job_id")
        if job is None:
            if time.time() - _mtime(folder) > 600:  # its submit failed long ago
                shutil.rmtree(folder, ignore_errors=True)
            return None
        try:
            shown = self.commands.show_job(job)
        except SlurmCommandError:
            return None
        state = base_state(shown[0].get("JobState")) if shown else None
        if state != "RUNNING":
            if state not in ("PENDING", "CONFIGURING") and self._all_finished(folder):
                shutil.rmtree(folder, ignore_errors=True)
            return None
        numbers = _numbers(folder)
        if not numbers or not self._all_finished(folder):
            return None
        servers = int(_read(folder / "servers.json").get("count") or 0)
        beats = [_mtime(path) for path in (folder / "nodes").glob("*")] if (folder / "nodes").is_dir() else []
        now = time.time()
        if not servers or len(beats) < servers or any(now - beat > HEARTBEAT_STALE_S for beat in beats):
            return None
        idle_s = float(_read(folder / "allocation.json").get("idle_s") or 0)
        # its last run's claim, or its servers' word that it ended (none yet: its follower finished first)
        last = max([_mtime(_claims(folder) / f"{numbers[-1]}.json"), *self._done_times(folder, numbers[-1])])
        return int(job) if now - last < idle_s - CLOSING_MARGIN_S else None

    def _all_finished(self, folder: Path) -> bool:
        for seq in _numbers(folder):
            run_id = _read(_claims(folder) / f"{seq}.json").get("run_id")
            if run_id and self.store.exists(run_id) and not self.store.status(run_id).state.finished:
                return False
        return True

    def _done_times(self, folder: Path, seq: int) -> list[float]:
        return [_mtime(path) for path in _claims(folder).glob(f"{seq}.done-*")]

    def _new(self, key: str, record: dict, work: Path, settings: SlurmSettings, framework: str | None) -> Claim:
        folder = Path(tempfile.mkdtemp(prefix=f"{key}-", dir=self.folder))
        try:
            for source, name in SERVED_FILES.items():
                shutil.copyfile(Path(__file__).with_name(source), folder / name)
            for sub in ("claims", "nodes"):
                (folder / sub).mkdir()
            preload = [*BASE_PRELOAD, *FRAMEWORK_PRELOAD.get(framework, ())]
            atomic_write_json(folder / "allocation.json", {"preload": preload, "idle_s": settings.keep_allocation_s})
            seq = take_number(folder, record)
            assert seq == 0
            script = folder / "job.sh"
            script.write_text(allocation_script(folder, (work / JOB_SCRIPT).read_text(), settings))
            job_id = self.commands.sbatch(script, cwd=str(folder))
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        atomic_write_json(folder / "job.json", {"job_id": job_id, "submitted_at": time.time()})
        return Claim(folder, job_id, 0, 0, new=True)


def allocation_script(folder: Path, run_script: str, settings: SlurmSettings) -> str:
    """The allocation's batch script: the run's options, then one server per node for as long as
    runs come (the node launcher's step: `--whole --mem=0`, all the job holds on each node)."""
    where = shlex.quote(str(folder))
    lines = [
        "#!/bin/bash",
        "# jupyter-px: a kept allocation (the Slurm setting keep_allocation_s); its runs are in claims/",
        "#SBATCH --job-name=px-keep",
        f"#SBATCH --output={where}/batch.out",
        *shape_options(run_script),
        *settings.setup,
        f"ALLOCATION={where}",
        'srun --kill-on-bad-exit=0 --wait=0 --nodes="$SLURM_JOB_NUM_NODES" --ntasks="$SLURM_JOB_NUM_NODES" '
        f'--ntasks-per-node=1 --whole --mem=0 {shlex.quote(settings.interpreter)} "$ALLOCATION/server.py" '
        '"$ALLOCATION" "$SLURM_TASKS_PER_NODE"',
    ]
    return "\n".join(lines) + "\n"


def signal_run(folder: Path, seq: int, name: str) -> None:
    """Ask the allocation's servers to send `name` (TERM or KILL) to run `seq`'s processes; KILL
    stays once asked."""
    path = _claims(folder) / f"{seq}.signal"
    with contextlib.suppress(OSError):
        if path.read_text().strip() == "KILL":
            return
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(name)
    os.replace(tmp, path)


def started(folder: Path) -> bool:
    """Whether the allocation's servers have started (its leader wrote how many they are)."""
    return (folder / "servers.json").exists()


def run_over(folder: Path, seq: int) -> bool:
    """Whether every server has ended run `seq` (or skipped it, stopped before it started)."""
    servers = int(_read(folder / "servers.json").get("count") or 0)
    return bool(servers) and len(list(_claims(folder).glob(f"{seq}.done-*"))) >= servers


def copy_output(folder: Path, offset: int, target: Path) -> None:
    """The run's part of the allocation's batch output (from `offset`), into the run's own."""
    with contextlib.suppress(OSError), open(folder / "batch.out", "rb") as source:
        source.seek(offset)
        target.write_bytes(source.read())


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
