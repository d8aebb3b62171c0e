"""Helpers for the local-backend tests: submit a job from tests/jobs, wait, and prove that a
finished run left no process behind."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
from waiting import wait_for

from jupyter_px.processes.detached import ProcessIdentity

JOBS = Path(__file__).parent / "jobs"

#: Generous: two cores, and other test suites may share them.
RUN_TIMEOUT_S = 240


def submit(script: str, topology, *, args=(), **kwargs):
    from jupyter_px.api import submit as api_submit

    return api_submit(JOBS / script, topology, args=list(args), **kwargs)


def wait(run, timeout: float = RUN_TIMEOUT_S):
    """Wait until finished and every process of the run is gone; return the final status."""
    status = run.wait(timeout=timeout, poll=0.1)
    assert_nothing_left(run)
    return status


def _belongs_to(proc: psutil.Process, run_id: str) -> bool:
    try:
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return proc.environ().get("PX_RUN_ID") == run_id
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def run_processes(run_id: str) -> list[psutil.Process]:
    return [p for p in psutil.process_iter() if _belongs_to(p, run_id)]


def assert_nothing_left(run, timeout: float = 20) -> None:
    """No recorded pid of the run and no process carrying its PX_RUN_ID is alive; the
    supervisor has exited."""
    status = run.status()
    recorded = [r.pid for r in status.replicas if r.pid]

    def supervisor_gone() -> bool:
        owner = status.owner
        return owner is None or not ProcessIdentity(owner.pid, owner.started_at).alive()

    wait_for(supervisor_gone, f"the supervisor of {run.run_id} to exit", timeout)
    alive = []
    for pid in recorded:
        try:
            proc = psutil.Process(pid)
        except psutil.NoSuchProcess:
            continue
        if _belongs_to(proc, run.run_id):
            alive.append(pid)
    assert not alive, f"replica processes of {run.run_id} still alive: {alive}"
    left = run_processes(run.run_id)
    assert not left, f"processes of {run.run_id} still alive: {[(p.pid, p.name()) for p in left]}"


def supervisor_and_watchdog(run) -> tuple[psutil.Process, list[psutil.Process]]:
    """The run's supervisor and its watchdog: its children that are not replicas (nor, for a
    run started warm, the zygote it forks its replicas from)."""
    supervisor = psutil.Process(run.status().owner.pid)
    replica_pids = {r.pid for r in run.status().replicas}
    children = [c for c in supervisor.children() if c.pid not in replica_pids]
    return supervisor, [c for c in children if c.name() != "px-zygote"]


def outputs(run) -> dict[str, dict]:
    """{file stem: parsed JSON} of what the job wrote to PX_OUTPUTS_PATH."""
    return {path.stem: json.loads(path.read_text()) for path in sorted(run.paths.outputs_dir.glob("*.json"))}


def replica(status, key: str):
    role, _, index = key.rpartition("-")
    return status.replica(role, int(index))


def describe(run) -> str:
    """Status, supervisor log and replica logs, for assertion messages."""
    parts = [run.status().model_dump_json(indent=1)]
    sup = run.paths.root / "supervisor.log"
    if sup.exists():
        parts.append("supervisor.log:\n" + sup.read_text()[-3000:])
    for log in sorted(run.paths.logs_dir.glob("*.log")):
        parts.append(f"{log.name}:\n" + log.read_text()[-2000:])
    return "\n".join(parts)
