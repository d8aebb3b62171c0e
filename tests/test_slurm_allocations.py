"""Kept allocations on a real Slurm cluster (the Slurm setting `keep_allocation_s`): the second run
of a cell starts at once in the job the first one left, its replicas forked on each node from a
server that had imported torch; a stop ends the run and leaves the allocation; an idle allocation
ends by itself; a run of another shape gets a job of its own."""

from __future__ import annotations

import json
import time
from pathlib import Path

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

from jupyter_px.runstore import RunStore
from jupyter_px.service import RunService, SourceText, Submission

pytestmark = pytest.mark.slurm

JOBS = Path(__file__).parent / "jobs"
#: torch_ddp.py, after a line that records whether torch was imported before the code ran
WARM_DDP = (
    "import os as _os, sys as _sys\n"
    "_warm = 'torch' in _sys.modules\n"
    "_key = f\"{_os.environ['PX_TASK_TYPE']}-{_os.environ['PX_TASK_INDEX']}\"\n"
    "open(_os.path.join(_os.environ['PX_OUTPUTS_PATH'], f'warm-{_key}-{_warm}'), 'w').close()\n"
    + (JOBS / "torch_ddp.py").read_text()
)
TOPOLOGY = topology_of(cpu=1, memory=700)


@pytest.fixture(name="keep")
def keep_fixture(use_slurm, monkeypatch):
    # long enough for the next run's submission on a loaded machine (12 s once ran out between the
    # first run's end and the second's claim), short enough to wait for the allocation's end
    monkeypatch.setenv("PX_SLURM_KEEP_ALLOCATION_S", "30")
    return use_slurm


def _ddp(service: RunService, name: str, topology: dict = TOPOLOGY) -> tuple[str, dict]:
    run_id = service.submit(Submission(SourceText(WARM_DDP, origin="ddp.py"), topology, name=name))
    status = service.wait(run_id, timeout=DEADLINE_S)
    logs = {key: service.log_tail(run_id, *key) for key in service.replicas(run_id)}
    assert status.state.value == "Succeeded", (status.message, logs)
    outputs = RunStore().paths(run_id).outputs_dir
    results = {key: json.loads((outputs / f"{key[0]}-{key[1]}.json").read_text()) for key in logs}
    assert {r["allreduce"] for r in results.values()} == {0.0 + 1.0 + 2.0}  # every rank took part
    assert len({json.dumps(r["weights"]) for r in results.values()}) == 1
    assert sorted(p.name for p in outputs.glob("warm-*")) == [
        "warm-master-0-True",
        "warm-worker-0-True",
        "warm-worker-1-True",
    ]  # torch came with the fork
    return run_id, json.loads((RunStore().paths(run_id).root / "slurm.json").read_text())


def test_the_next_run_of_a_shape_starts_in_the_kept_allocation_warm_and_it_ends_once_idle(keep, px_home):
    service = RunService()
    first, handle = _ddp(service, "first")
    assert handle["allocation"] and handle["claim"] == 0
    job = handle["job_id"]
    assert queued(keep, job) == [f"{job} RUNNING"]  # kept after its run

    second, again = _ddp(service, "second")
    assert (again["job_id"], again["allocation"], again["claim"]) == (job, handle["allocation"], 1)
    assert len(keep.run(["squeue", "--noheader"]).splitlines()) == 1  # one job for both runs
    # each run has its own records, logs and its part of the batch output
    for run_id in (first, second):
        root = RunStore().paths(run_id).root
        assert len(list((root / "slurm" / f"job-{job}").glob("exit-*.json"))) == 3
        assert "rank 0/3: all_reduce=3" in service.log_tail(run_id, "master", 0)
    assert "serves the allocation's runs" in (RunStore().paths(first).root / "slurm" / "batch.out").read_text()

    # another shape: a job (and an allocation) of its own
    other, elsewhere = _ddp(service, "other", topology_of(cpu=1, memory=800))
    assert elsewhere["job_id"] != job and elsewhere["claim"] == 0

    # idle for keep_allocation_s: the allocations end, their folders go at the next claim
    wait_for(lambda: not queued(keep, job), "the idle allocation to end", timeout=90)
    wait_for(lambda: not queued(keep, elsewhere["job_id"]), "the other allocation to end", timeout=90)
    third, fresh = _ddp(service, "third")
    assert fresh["job_id"] not in (job, elsewhere["job_id"]) and fresh["claim"] == 0
    assert not Path(handle["allocation"]).exists()


def test_a_stop_ends_the_run_and_leaves_the_allocation_to_the_next_run(keep, px_home):
    service = RunService()
    run_id = service.submit(Submission(SourceText(STOPPABLE, origin="stoppable.py"), TOPOLOGY, name="stoppable"))
    outputs = RunStore().paths(run_id).outputs_dir
    wait_for(lambda: len(list(outputs.iterdir())) == 3, "every replica to log its steps", timeout=DEADLINE_S)
    job = job_id(px_home, run_id)
    started = time.monotonic()
    status = service.stop(run_id)
    assert time.monotonic() - started < 10 + 30  # the grace (PX_STOP_GRACE_S=10 here) bounds it
    assert status.state.value == "Stopped" and status.reason == "StoppedByUser", status
    assert {r.state.value for r in status.replicas} == {"Stopped"}, status.replicas
    assert {r.exit_code for r in status.replicas} == {143}  # SIGTERM first: they could flush
    metrics = service.metrics(run_id)
    assert {key: len(series["loss"].steps) for key, series in metrics.items()} == {
        "master-0": 50,
        "worker-0": 50,
        "worker-1": 50,
    }
    assert queued(keep, job) == [f"{job} RUNNING"]  # the allocation stays

    run_id, handle = _ddp(service, "after-the-stop")
    assert (handle["job_id"], handle["claim"]) == (job, 1)


def test_a_run_stopped_while_its_new_allocation_waits_takes_the_allocation_with_it(keep, px_home):
    nodes = len(keep.nodes)
    keep.run(["sbatch", "--output=/dev/null", f"--nodes={nodes}", "--exclusive", "--wrap=sleep 300"])  # every CPU
    service = RunService()
    run_id = service.submit(Submission(SourceText(STOPPABLE, origin="stoppable.py"), TOPOLOGY, name="waits"))
    job = job_id(px_home, run_id)
    wait_for(lambda: service.status(run_id).state.value == "Pending", "the run to wait in the queue")
    assert queued(keep, job) == [f"{job} PENDING"]
    status = service.stop(run_id)
    assert status.state.value == "Stopped" and status.reason == "StoppedByUser", status
    assert not queued(keep, job)  # made for this run alone, the allocation went with it
    # the preflight's probe of the shared filesystem found no free CPU: not tried again for a while
    assert list((px_home / "slurm").glob("shared-busy-*.json"))
