"""The Slurm backend with accounting (slurmdbd + MariaDB beside the test cluster, so `sacct`
answers): a job cancelled by someone else's `scancel` ends Stopped, saying who cancelled it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_cluster import SlurmCluster
from slurm_support import DEADLINE_S, job_id, queued, started_cluster, use_slurm_fixture, wait_for  # noqa: F401

from jupyter_px.service import RunService, SourceText, Submission

pytestmark = pytest.mark.slurm


#: While this file is in the cluster's folder, its epilog takes 8 s (a site's node health check):
#: a cancelled job stays COMPLETING that long after its tasks ended by the TERM.
SLOW_EPILOG = "slow-epilog"
WAITS = "import os, time\nprint('waiting', flush=True)\ntime.sleep(600)\n"


@pytest.fixture(scope="module", name="slurm_cluster")
def accounting_cluster() -> Iterator[SlurmCluster]:
    """This module's cluster (which `use_slurm` points the backend at): with slurmdbd + MariaDB."""
    with started_cluster(accounting=True, epilog=f'[ -e "$(dirname "$0")/{SLOW_EPILOG}" ] && sleep 8') as cluster:
        yield cluster


@pytest.mark.parametrize("slow_epilog", [False, True], ids=["quick-epilog", "slow-epilog"])
def test_a_job_cancelled_outside_jupyter_px_is_stopped_and_says_by_whom(use_slurm, px_home, slow_epilog):
    """The replicas end by a TERM nobody here sent: the run waits for the job's state to say why
    (COMPLETING as long as the epilog runs), never taking the signal for a failure of its own."""
    slow = Path(use_slurm.root or "") / SLOW_EPILOG
    if slow_epilog:
        slow.touch()
    try:
        cancelled_outside(use_slurm, px_home)
    finally:
        slow.unlink(missing_ok=True)


def cancelled_outside(use_slurm: SlurmCluster, px_home: Path) -> None:
    service = RunService()
    topology = {"framework": "pytorch", "backend": "slurm", "environment": {"replicas": {"n_workers": 1}}}
    run_id = service.submit(Submission(SourceText(WAITS), topology, name="cancelled"))
    wait_for(lambda: service.status(run_id).state.value == "Running", "the run to run")
    job = job_id(px_home, run_id)
    use_slurm.run(["scancel", str(job)])  # someone else's cancel: no stop request of ours
    status = service.wait(run_id, timeout=DEADLINE_S)
    assert status.state.value == "Stopped" and status.reason == "Cancelled", status
    assert status.message == f"Slurm job {job} was CANCELLED by root (uid 0), outside jupyter-px"
    assert {r.state.value for r in status.replicas} == {"Stopped"}
    assert {r.reason for r in status.replicas} == {"Cancelled"}
    # accounting knows the job too
    accounted = use_slurm.run(
        ["sacct", "--noheader", "--parsable2", "--allocations", "--format=State", f"--jobs={job}"]
    )
    assert accounted.strip() == "CANCELLED by 0"
    assert not queued(use_slurm, job)
