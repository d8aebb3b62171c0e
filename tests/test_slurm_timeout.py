"""A Slurm job past its time limit, on a real cluster (tests/slurm_cluster): the monitor shows the
time left while it runs; Slurm ends it (TIMEOUT) and the run says so, with the limit, keeping
its logs. Its own module: Slurm enforces a one-minute limit within about a minute and a half, and
this lets it run beside the other Slurm tests."""

from __future__ import annotations

import re

import pytest
from slurm_support import (  # noqa: F401 (fixtures)
    DEADLINE_S,
    STOPPABLE,
    job_id,
    queued,
    slurm_cluster_fixture,
    topology_of,
    use_slurm_fixture,
    wait_for,
)

from jupyter_px.service import RunService, SourceText, Submission

pytestmark = pytest.mark.slurm


def test_a_job_past_its_time_limit_ends_timeout_with_the_limit(use_slurm, px_home, tmp_path, monkeypatch):
    settings = tmp_path / "slurm.yaml"
    settings.write_text("time_limit: '1'\n")  # one minute, Slurm's shortest
    monkeypatch.setenv("PX_SLURM_CONFIG", str(settings))
    service = RunService()
    run_id = service.submit(Submission(SourceText(STOPPABLE), topology_of(workers=1), name="late"))
    running = wait_for(
        lambda: service.status(run_id) if service.status(run_id).state.value == "Running" else None, "it to run"
    )
    assert re.search(r"; (under a minute|1 min) left of 00:01:00$", running.message)  # what the monitor shows
    status = service.wait(run_id, timeout=DEADLINE_S)
    assert status.state.value == "Failed" and status.reason == "Timeout", status
    assert status.message == f"Slurm job {job_id(px_home, run_id)} reached its time limit (00:01:00): TIMEOUT"
    assert {r.reason for r in status.replicas} == {"Timeout"}
    assert {r.message for r in status.replicas} == {"stopped by Slurm at the job's time limit (00:01:00)"}
    for role, index in service.replicas(run_id):  # its logs and metrics stay
        assert "logged 50 steps" in service.log_tail(run_id, role, index)
    assert not queued(use_slurm, job_id(px_home, run_id))
