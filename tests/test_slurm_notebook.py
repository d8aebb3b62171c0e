"""A Slurm run from notebooks, and a sweep of Slurm jobs, on a real cluster (tests/slurm_cluster).

The run is Slurm's: it outlives the kernel that submitted it, and `%px_attach` in a new kernel
picks it up again (nbclient, real kernels). A sweep's trials are one Slurm job array, at most
`concurrency` of its tasks running at a time."""

from __future__ import annotations

import json
import os
import re
import textwrap
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from slurm_support import DEADLINE_S, gone, job_id, queued, slurm_cluster_fixture, use_slurm_fixture, wait_for  # noqa: F401

import jupyter_px
from jupyter_px.api import Run
from jupyter_px.runstore import RunState
from jupyter_px.runstore.sweeps import SweepState, TrialState

pytestmark = pytest.mark.slurm


def _client(nb, px_home, cwd):
    client = NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(cwd)}})
    return client, {**os.environ, "PX_HOME": str(px_home)}


def _monitor_states(client) -> list[dict[str, str]]:
    found = []
    for state in client.widget_state.values():
        value = state.get("value")
        if isinstance(value, str) and "class='px-replicas'" in value:
            found.append(dict(re.findall(r"data-replica='([^']+)' data-state='([^']+)'", value)))
    return found


def test_a_slurm_run_outlives_its_kernel_and_px_attach_picks_it_up(use_slurm, px_home, tmp_path):
    release = tmp_path / "release"
    steps = 30
    code = textwrap.dedent(f"""\
        %%px_distributed --framework pytorch --workers 1 --backend slurm --name survivor -o run
        import os, time
        from jupyter_px import tracking
        for step in range({steps}):
            tracking.log_metrics(step=step, value=float(step))
            if step == 14:
                tracking.flush()
                while not os.path.exists({str(release)!r}):
                    time.sleep(0.05)
        """)
    first = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(c) for c in ("%load_ext jupyter_px", code, "print(run.run_id)")]
    )
    client, env = _client(first, px_home, tmp_path)
    with client.setup_kernel(env=env):
        for index, cell in enumerate(first.cells):
            client.execute_cell(cell, index)
    run_id = first.cells[2].outputs[0]["text"].strip()  # the kernel has shut down now

    job = Run(run_id)
    assert job.record.backend == "slurm"
    wait_for(
        lambda: len(m := job.metrics()) == 2 and all("value" in s and len(s["value"].steps) >= 15 for s in m.values()),
        "both replicas to log step 14",
    )
    assert queued(use_slurm, job_id(px_home, run_id))  # the job goes on in Slurm without the kernel

    second = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(c)
            for c in ("%load_ext jupyter_px", f"%px_attach {run_id} -o run", f"%px_attach {run_id} --wait")
        ]
    )
    client, env = _client(second, px_home, tmp_path)
    with client.setup_kernel(env=env):
        client.execute_cell(second.cells[0], 0)
        client.execute_cell(second.cells[1], 1)
        attached = _monitor_states(client)
        assert attached and set(attached[0].values()) == {"Running"}  # the same run, still going
        release.write_text("go")
        client.execute_cell(second.cells[2], 2)
        final = _monitor_states(client)
    assert final[-1] == {"master-0": "Succeeded", "worker-0": "Succeeded"}
    for replica in ("master-0", "worker-0"):
        assert job.metrics()[replica]["value"].steps == list(range(steps)), replica
    gone(use_slurm, job_id(px_home, run_id))


SWEEP = """
framework: pytorch
backend: slurm
environment:
  resources: {cpu: 1, memory: 256}
  replicas:
    n_workers: 1
    default_worker:
      resources: {cpu: 1, memory: 256}
hptuning:
  concurrency: 2
  seed: 3
  random_search:
    n_experiments: 4
  matrix:
    x:
      uniform: 0:6
  metric: {name: loss, optimization: minimize}
"""


def test_a_sweep_of_four_slurm_trials_is_one_job_array_run_two_at_a_time(use_slurm, px_home, tmp_path):
    """A random search's trials are chosen up front, so they go to Slurm as one job array
    (`--array=0-3%2`): one record in the queue, two tasks running at most, the others PENDING
    with Slurm's reason (JobArrayTaskLimit), which their trials show."""
    script = tmp_path / "trial.py"
    script.write_text(
        "import time\nfrom jupyter_px import tracking\n"
        "x = tracking.get_params()['x']\n"
        "for step in range(1, 4):\n"
        "    tracking.log_metrics(step=step, loss=(x - 3) ** 2 + 1 / step)\n"
        "    time.sleep(0.5)\n"
    )
    sweep = jupyter_px.sweep(script, SWEEP, name="sl")
    lines: set[str] = set()
    most_running = 0
    throttled = re.compile(r"Slurm job \d+_[0-3] is PENDING in partition debug's queue: .*\(JobArrayTaskLimit\)")
    reasons: set[str] = set()
    held_by: set[str | None] = set()
    deadline = time.monotonic() + DEADLINE_S * 2
    while not sweep.status().state.finished and time.monotonic() < deadline:
        held = queued(use_slurm, probes=False)  # what Slurm holds for the sweep right now: "<id> <state>"
        lines.update(held)
        most_running = max(most_running, sum(line.endswith(" RUNNING") for line in held))
        reasons.update(r.reason for r in sweep.rows() if r.state == TrialState.PENDING and r.reason)
        for run in sweep.trials():  # a task held back has no follower yet: the controller keeps it
            status = run.status()
            if status.state == RunState.PENDING and "JobArrayTaskLimit" in (status.message or ""):
                held_by.add(status.owner.kind if status.owner else None)
        time.sleep(0.2)
    status = sweep.wait(timeout=30)
    log = (px_home / "sweeps" / sweep.sweep_id / "controller.log").read_text()
    assert status.state == SweepState.SUCCEEDED, log
    rows = sweep.rows()
    assert [r.number for r in rows] == [0, 1, 2, 3] and {r.state for r in rows} == {TrialState.COMPLETE}
    runs = {run.record.sweep.trial: run for run in sweep.trials()}
    assert {run.record.backend for run in runs.values()} == {"slurm"}
    handles = {trial: json.loads((run.paths.root / "slurm.json").read_text()) for trial, run in runs.items()}
    array = handles[0]["job_id"]
    assert {h["job_id"] for h in handles.values()} == {array}, handles  # one sbatch for the sweep
    assert {trial: h["array_task"] for trial, h in handles.items()} == {0: 0, 1: 1, 2: 2, 3: 3}
    assert {line.split()[0].split("_")[0] for line in lines} == {str(array)}, lines  # one job in the queue
    assert any(re.fullmatch(rf"{array}_\[\S+%2\] PENDING", line) for line in lines), lines  # the rest held back
    assert 1 <= most_running <= 2, lines  # Slurm runs `concurrency` of its tasks at a time
    assert any(throttled.fullmatch(reason) for reason in reasons), reasons  # a trial waiting says why
    assert "keeper" in held_by and None not in held_by, held_by  # (its follower may have started since)
    assert {run.status().state for run in runs.values()} == {RunState.SUCCEEDED}
    for row in rows:  # the objective each trial's replicas logged, with its own x
        assert row.value == pytest.approx((row.params["x"] - 3) ** 2 + 1 / 3)
    for trial, run in runs.items():  # each task's records and batch output in its own run
        assert (run.paths.root / "slurm" / f"job-{array}_{trial}").is_dir()
        assert (run.paths.root / "slurm" / "batch.out").exists()


def test_stopping_a_sweep_cancels_its_array_s_running_and_pending_tasks(use_slurm, px_home, tmp_path):
    script = tmp_path / "trial.py"
    script.write_text(
        "import time\nfrom jupyter_px import tracking\ntracking.log_metrics(step=1, loss=1.0)\ntime.sleep(600)\n"
    )
    sweep = jupyter_px.sweep(script, SWEEP, name="stopped")

    def two_run_two_wait():
        states = [run.status().state for run in sweep.trials()]
        return sorted(states) == sorted([RunState.RUNNING] * 2 + [RunState.PENDING] * 2)

    wait_for(two_run_two_wait, "two tasks running, two held back")
    status = sweep.stop()
    assert status.state == SweepState.STOPPED
    assert {run.status().state for run in sweep.trials()} == {RunState.STOPPED}
    assert queued(use_slurm) == []  # no task of the array left, running or pending


def test_with_job_arrays_off_each_trial_is_its_own_job_two_in_the_queue_at_most(
    use_slurm, px_home, tmp_path, monkeypatch
):
    """`job_arrays: false` (a site that refuses arrays), or a search that learns from finished
    trials: a job per trial, the sweep's concurrency bounding how many Slurm holds at once."""
    monkeypatch.setenv("PX_SLURM_JOB_ARRAYS", "false")
    script = tmp_path / "trial.py"
    script.write_text(
        "from jupyter_px import tracking\ntracking.log_metrics(step=1, loss=tracking.get_params()['x'])\n"
    )
    sweep = jupyter_px.sweep(script, SWEEP, name="one-by-one")
    most = 0
    deadline = time.monotonic() + DEADLINE_S * 2
    while not sweep.status().state.finished and time.monotonic() < deadline:
        most = max(most, len(queued(use_slurm, probes=False)))
        time.sleep(0.2)
    status = sweep.wait(timeout=30)
    assert status.state == SweepState.SUCCEEDED, (px_home / "sweeps" / sweep.sweep_id / "controller.log").read_text()
    handles = [json.loads((run.paths.root / "slurm.json").read_text()) for run in sweep.trials()]
    assert len({h["job_id"] for h in handles}) == 4 and {h["array_task"] for h in handles} == {None}
    assert 1 <= most <= 2, most  # never more than `concurrency` jobs in Slurm's queue at once


def test_trials_waiting_in_the_queue_are_pending_with_slurms_reason(use_slurm, px_home, tmp_path):
    """A sweep's trials are Slurm jobs like any run: while the cluster is full they wait in the
    partition's queue, and the sweep shows them Pending with Slurm's reason, then they run."""
    from slurm_support import topology_of

    from jupyter_px.service import RunService, ScriptFile, Submission

    faults = Path(__file__).parent / "jobs" / "faults.py"
    service = RunService()
    blocker = service.submit(Submission(ScriptFile(faults), topology_of(cpu=4), args=("sleep",), name="blocker"))
    wait_for(lambda: service.status(blocker).state == RunState.RUNNING, "the blocker to take every CPU")
    script = tmp_path / "trial.py"
    script.write_text(
        "from jupyter_px import tracking\ntracking.log_metrics(step=1, loss=tracking.get_params()['x'])\n"
    )
    sweep = jupyter_px.sweep(script, SWEEP.replace("n_experiments: 4", "n_experiments: 2"), name="queued")

    said_why = re.compile(
        r"Slurm job \d+_[01] is PENDING in partition debug's queue: \S+ of \d+ \((Resources|Priority)\)"
    )

    def pending_rows():  # once Slurm said why (first "Slurm job N submitted", then no reason until scheduled)
        rows = [r for r in sweep.rows() if r.state == TrialState.PENDING and said_why.fullmatch(r.reason or "")]
        return rows if len(rows) == 2 else None

    wait_for(pending_rows, "both trials to wait in the queue with Slurm's reason")
    service.stop(blocker)
    status = sweep.wait(timeout=DEADLINE_S)
    assert status.state == SweepState.SUCCEEDED and {r.state for r in sweep.rows()} == {TrialState.COMPLETE}
