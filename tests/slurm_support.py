"""What the Slurm backend's tests share: a real cluster per test module (tests/slurm_cluster),
the environment that points the backend at it, and waiting on runs and jobs.

    from slurm_support import slurm_cluster_fixture, use_slurm_fixture  # noqa: F401 (fixtures)

Where Slurm cannot be started here (not installed, not root) the tests skip with the reason; under
CI (`CI=true`), whose `.ci/run` installs it, they fail instead.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from outside_data import under_ci
from slurm_cluster import SlurmCluster, SlurmUnavailable
from waiting import wait_for

#: Generous: jobs are real processes (torch, TensorFlow) on a shared, loaded two-core machine.
DEADLINE_S = 180.0


@contextlib.contextmanager
def started_cluster(**options: Any) -> Iterator[SlurmCluster]:
    """A running cluster for the duration; skips (fails under CI) when none can be started."""
    cluster = SlurmCluster(**options)
    try:
        cluster.start()
    except SlurmUnavailable as error:
        if under_ci():
            pytest.fail(f"Slurm cannot be started here: {error} (.ci/run installs slurm-wlm munge)")
        pytest.skip(f"Slurm cannot be started here: {error}")
    try:
        yield cluster
    finally:
        problems = cluster.stop()
        assert not problems, f"the cluster left behind: {problems}"


@pytest.fixture(scope="module", name="slurm_cluster")
def slurm_cluster_fixture() -> Iterator[SlurmCluster]:
    """Three nodes of 4 CPUs and 4000 MiB each, no accounting, for the whole test module."""
    with started_cluster() as cluster:
        yield cluster


@pytest.fixture(name="use_slurm")
def use_slurm_fixture(
    slurm_cluster: SlurmCluster, px_home: Path, tmp_path: Path, monkeypatch
) -> Iterator[SlurmCluster]:
    """Point this test's backend at the module's cluster: SLURM_CONF, no settings file, fast polls,
    a short stop grace; afterwards every follower of `px_home` ended and the queue empty."""
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    monkeypatch.setenv("PX_SLURM_CONFIG", str(tmp_path / "no-slurm-settings.yaml"))
    monkeypatch.setenv("PX_SLURM_POLL_INTERVAL_S", "0.5")
    monkeypatch.setenv("PX_STOP_GRACE_S", "10")
    try:
        yield slurm_cluster
    finally:
        stop_followers(px_home)
        cancel_all(slurm_cluster)


def cancel_all(cluster: SlurmCluster) -> None:
    """Cancel whatever a test left in the queue and wait until it has gone."""
    with contextlib.suppress(SlurmUnavailable):
        cluster.run(["scancel", "--partition", cluster.partition])
    wait_for(lambda: not queued(cluster), "the queue to empty", timeout=60)


#: The job name of the preflight's shared-filesystem probe (`commands.SlurmCommands.probe`).
PROBE_JOB = "px-probe"


def queued(cluster: SlurmCluster, job_id: int | None = None, probes: bool = True) -> list[str]:
    """The jobs `squeue` shows (its default: pending, running, completing) as "<id> <state>", or
    one job's. `probes=False`: without the preflight's probes (one may still be COMPLETING, on a
    loaded machine, when the run it cleared is queued)."""
    argv = ["squeue", "--noheader", "--format=%i %T" if probes else "--format=%i %T %j"]
    if job_id is not None:
        argv += ["--jobs", str(job_id)]
    try:
        out = cluster.run(argv)
    except SlurmUnavailable as error:
        if "Invalid job id" in str(error):
            return []
        raise
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    if probes:
        return lines
    return [line.rsplit(" ", 1)[0] for line in lines if line.rsplit(" ", 1)[-1] != PROBE_JOB]


def gone(cluster: SlurmCluster, job: int) -> None:
    """A run that ended by itself leaves nothing queued: its tasks recorded their ends, which
    decides the run; the batch script then ends with its srun (a second or two, more under load),
    or the follower cancels the job after `JOB_END_WAIT_S`."""
    wait_for(lambda: not queued(cluster, job), "the job to leave the queue", timeout=30)


def follower_pids(home: Path) -> list[int]:
    from jupyter_px.runstore import RunStore

    pids = []
    for _, status in RunStore(home).list():
        if status.owner is not None and status.owner.kind == "follower":
            pids.append(status.owner.pid)
    return pids


def stop_followers(home: Path) -> None:
    """End every follower of a run in `home` that is still there (a test that failed half-way)."""
    for pid in follower_pids(home):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    for pid in follower_pids(home):
        while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}"):
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def job_id(home: Path, run_id: str) -> int:
    import json

    return int(json.loads((home / "runs" / run_id / "slurm.json").read_text())["job_id"])


def topology_of(workers: int = 2, **resources) -> dict:
    """A PyTorch topology on Slurm: a master and `workers` workers, each 1 CPU and 256 MiB unless
    `resources` says otherwise."""
    each = {"cpu": 1, "memory": 256, **resources}
    return {
        "framework": "pytorch",
        "backend": "slurm",
        "environment": {"resources": each, "replicas": {"n_workers": workers, "default_worker": {"resources": each}}},
    }


#: A replica that logs 50 steps, flushes, says so in its log and outputs, then waits to be stopped.
STOPPABLE = """
import os, sys, time
from jupyter_px import tracking
me = f"{os.environ['PX_TASK_TYPE']}-{os.environ['PX_TASK_INDEX']}"
for step in range(50):
    tracking.log_metrics(step=step, loss=1.0 / (step + 1))
tracking.flush()
print(f"{me}: logged 50 steps; waiting to be stopped", flush=True)
open(os.path.join(os.environ["PX_OUTPUTS_PATH"], me), "w").close()
time.sleep(600)
"""
