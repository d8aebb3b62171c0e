"""Resumable runs: the checkpoint convention (`tracking.save_checkpoint`/`load_checkpoint`), the
run-level retry (`termination: {maxRetries: N}`) and the local gang restart, driven by real
failures: a rank of a real torch DDP job (gloo) SIGKILLed mid-run by `jupyter px kill`.

The gang restart's promise is checked on what the job computed: the run resumed from its newest
checkpoint ends with a model bitwise equal to that of a run without failures (same seed, CPU).
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import time

import pytest
from local_support import describe, replica, submit, wait
from px_cli import px
from waiting import wait_for

from jupyter_px.presentation.run_view import RunViewSource
from jupyter_px.runstore import RunState
from jupyter_px.runstore.checkpoints import all_checkpoints, newest_step
from jupyter_px.server.models import RunDetail
from jupyter_px.service import RunService
from jupyter_px.topology import TopologyError, parse_topology
from jupyter_px.topology.termination import lone_restart_warnings

#: Each real job runs twice, cold and warm (`launch`, tests/conftest.py): an attempt is forked
#: from the template's zygote again, as the first was.
pytestmark = [pytest.mark.usefixtures("launch")]


def _tracking_env(monkeypatch, outputs, role="worker", index=1):
    monkeypatch.setenv("PX_RUN_ID", "run-1")
    monkeypatch.setenv("PX_OUTPUTS_PATH", str(outputs))
    monkeypatch.setenv("PX_TASK_TYPE", role)
    monkeypatch.setenv("PX_TASK_INDEX", str(index))
    for name in ("PX_RESUME_FROM", "PX_CHECKPOINT_STEP", "LOCAL_RANK", "PX_MPI_RANK"):
        monkeypatch.delenv(name, raising=False)


# ---- the checkpoint convention ------------------------------------------------------------------


def test_checkpoints_are_per_rank_the_last_k_kept_and_the_newest_loaded(tmp_path, monkeypatch):
    import torch

    from jupyter_px import tracking

    outputs = tmp_path / "outputs"
    _tracking_env(monkeypatch, outputs)
    assert tracking.load_checkpoint() is None
    for step in (5, 10, 15, 20):
        tracking.save_checkpoint({"w": torch.full((3,), float(step))}, step, keep=3)
    names = sorted(p.name for p in (outputs / "checkpoints" / "worker-1").iterdir())
    assert names == ["step-000000000010.pt", "step-000000000015.pt", "step-000000000020.pt"]
    got = tracking.load_checkpoint()
    assert got.step == 20 and torch.equal(got.state["w"], torch.full((3,), 20.0))
    monkeypatch.setenv("PX_TASK_INDEX", "0")  # another rank has none of its own
    assert tracking.load_checkpoint() is None
    tracking.save_checkpoint({"lr": 0.1}, 7, shared=True)
    assert tracking.load_checkpoint(shared=True).state == {"lr": 0.1}
    listed = [(c.scope, c.step) for c in all_checkpoints(str(outputs))]
    assert listed == [("shared", 7), ("worker-1", 10), ("worker-1", 15), ("worker-1", 20)]
    monkeypatch.setenv("PX_TASK_INDEX", "1")
    monkeypatch.setenv("PX_CHECKPOINT_STEP", "15")  # the gang's common step after a restart
    assert tracking.load_checkpoint().step == 15


def test_bad_arguments_name_the_value(tmp_path, monkeypatch):
    from jupyter_px import tracking

    _tracking_env(monkeypatch, tmp_path / "outputs")
    with pytest.raises(ValueError, match=r"step must be a whole number >= 0, got -1"):
        tracking.save_checkpoint({}, -1)
    with pytest.raises(ValueError, match=r"keep must be a whole number >= 1, got 0"):
        tracking.save_checkpoint({}, 1, keep=0)


SAVER = """
import os, sys
from jupyter_px import tracking
for step in range(1, 10_000):
    tracking.save_checkpoint({"step": step, "blob": bytes([step % 256]) * (24 << 20)}, step, keep=2)
    print(step, flush=True)
"""


def test_a_save_killed_midway_leaves_the_previous_checkpoint_complete(tmp_path):
    """SIGKILL while 24 MiB are being written: what load_checkpoint returns is whole."""
    outputs = tmp_path / "outputs"
    env = {**os.environ, "PX_RUN_ID": "run-1", "PX_OUTPUTS_PATH": str(outputs), "PX_TASK_TYPE": "master"}
    env.pop("PX_CHECKPOINT_STEP", None)
    saver = subprocess.Popen([sys.executable, "-c", SAVER], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert saver.stdout is not None
        wait_for(lambda: int(saver.stdout.readline() or 0) >= 2, "two checkpoints saved", timeout=120)
        folder = outputs / "checkpoints" / "master-0"
        wait_for(lambda: any(p.name.startswith(".") for p in folder.iterdir()), "a save under way", timeout=60, poll=0)
        saver.send_signal(signal.SIGKILL)
        saver.wait(timeout=30)
    finally:
        saver.kill()
    leftovers = [p.name for p in folder.iterdir() if p.name.startswith(".")]
    complete = [p for p in folder.iterdir() if not p.name.startswith(".")]
    assert complete and all(p.stat().st_size > 24 << 20 for p in complete)
    code = "from jupyter_px import tracking; c = tracking.load_checkpoint(); "
    code += "print(c.step, c.state['step'], len(c.state['blob']))"
    loaded = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    step, saved_step, size = map(int, loaded.stdout.split())
    assert step == saved_step and size == 24 << 20
    # the next save removes what the killed one left
    again = "from jupyter_px import tracking; tracking.save_checkpoint({'step': 0}, 99999, keep=2)"
    subprocess.run([sys.executable, "-c", again], env=env, check=True)
    assert leftovers and not [p for p in folder.iterdir() if p.name.startswith(".")]
    assert pickle.loads((folder / "step-000000099999.pkl").read_bytes()) == {"step": 0}


def test_the_gangs_common_step_is_the_slowest_scopes_newest(tmp_path, monkeypatch):
    from jupyter_px import tracking

    outputs = tmp_path / "outputs"
    _tracking_env(monkeypatch, outputs, index=0)
    for step in (10, 20, 30):
        tracking.save_checkpoint({"s": step}, step)
    monkeypatch.setenv("PX_TASK_INDEX", "1")
    tracking.save_checkpoint({"s": 10}, 10)
    tracking.save_checkpoint({"s": 20}, 20)  # killed before its save at 30
    assert newest_step(str(outputs)) == 20


# ---- the topology's run-level retry ---------------------------------------------------------------


def test_termination_reads_polyaxon_v1s_spelling_and_ours():
    pasted = parse_topology("framework: pytorch\ntermination:\n  maxRetries: 3\n")
    assert pasted.termination.max_retries == 3 and pasted.termination.retry_on == "ExitCode"
    ours = parse_topology({"framework": "pytorch", "termination": {"max_retries": 2, "retry_on": [1, 139]}})
    assert ours.termination.retries(139) and ours.termination.retries(1) and not ours.termination.retries(137)
    assert pasted.termination.retries(137) and pasted.termination.retries(143)
    assert not pasted.termination.retries(1) and not pasted.termination.retries(2)


@pytest.mark.parametrize(
    "termination, says",
    [
        ({"maxRetries": -1}, "termination.maxRetries: -1 is not >= 0"),
        ({"maxRetries": True}, "termination.maxRetries: true is not a whole number"),
        ({"maxRetries": 1, "max_retries": 2}, "termination.maxRetries: give either maxRetries or max_retries"),
        ({"max_retries": 1, "retry_on": "Sometimes"}, "termination.retry_on: 'Sometimes' is not one of"),
        ({"retryOn": [1, 300]}, "termination.retryOn: 300 is not an exit code from 1 to 255"),
        ({"ttl": 60}, "termination.ttl: unknown field (value 60)"),
    ],
)
def test_a_bad_termination_names_the_field_and_value(termination, says):
    with pytest.raises(TopologyError) as error:
        parse_topology({"framework": "pytorch", "termination": termination})
    assert says in str(error.value)


def test_a_backend_that_does_not_retry_refuses_max_retries_rather_than_drop_it():
    with pytest.raises(TopologyError) as error:
        parse_topology({"framework": "pytorch", "backend": "ssh", "termination": {"maxRetries": 2}})
    assert "termination.maxRetries: 2: the ssh backend does not start a run again yet" in str(error.value)
    assert parse_topology({"framework": "pytorch", "backend": "ssh", "termination": {"maxRetries": 0}})
    with pytest.raises(TopologyError) as error:  # Trainer v2's own way is named
        parse_topology({"framework": "pytorch", "backend": "kubeflow-trainer", "termination": {"maxRetries": 2}})
    assert "on it, its runtime's failurePolicy.maxRestarts restarts the whole JobSet" in str(error.value)


def test_a_lone_ddp_restart_is_warned_of_and_points_at_the_run_level_retry():
    restarts = {"default_worker": {"restart_policy": "OnFailure", "max_restarts": 2}, "n_workers": 2}
    ddp = parse_topology({"framework": "pytorch", "environment": {"replicas": restarts}})
    (warning,) = lone_restart_warnings(ddp)
    assert "worker-0, worker-1 alone" in warning and "termination: {maxRetries: N}" in warning
    ps = {**restarts, "n_ps": 1}
    assert lone_restart_warnings(parse_topology({"framework": "tensorflow", "environment": {"replicas": ps}})) == []
    never = parse_topology({"framework": "pytorch", "environment": {"replicas": {"n_workers": 2}}})
    assert lone_restart_warnings(never) == []


def test_topology_validate_prints_the_warning(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(
        "framework: pytorch\nenvironment:\n  replicas:\n    n_workers: 1\n"
        "    default_worker: {restart_policy: OnFailure, max_restarts: 3}\n"
    )
    done = px("validate", str(path))
    assert done.returncode == 0, done.stderr
    assert "warning: restart_policy restarts worker-0 alone" in done.stderr


# ---- gang restarts of a real DDP job ---------------------------------------------------------------

STEPS = 40


def _topology(max_retries: int | None, workers: int = 2) -> dict:
    topology: dict = {"framework": "pytorch", "environment": {"replicas": {"n_workers": workers}}}
    if max_retries is not None:
        topology["termination"] = {"maxRetries": max_retries}
    return topology


def _kill(run, key: str, signame: str = "KILL") -> str:
    done = px("kill", run.run_id, key, "--signal", signame)
    assert done.returncode == 0, done.stderr + describe(run)
    return done.stdout


def _checkpointed(run, key: str, at_least: int) -> bool:
    steps = [c.step for c in all_checkpoints(str(run.paths.outputs_dir)) if c.scope == key]
    return bool(steps) and max(steps) >= at_least


def _final_model(run) -> dict:
    import torch

    return torch.load(run.paths.outputs_dir / "final.pt", weights_only=True)


# The runs below start warm, as a user's do: what is retried, and what the run says, does not
# depend on how a replica started (gangs restarted cold: tests/test_elastic_workers.py).
@pytest.mark.jobs
@pytest.mark.warm_only
def test_a_killed_rank_restarts_the_gang_which_resumes_and_ends_with_the_same_model(px_home):
    """worker-1 SIGKILLed mid-run: every replica is stopped and started again as attempt 2 on a
    new port, each resumes from the newest checkpoint they all have, the run succeeds, and the
    model is bitwise the model of a run without failures."""
    import torch

    reference = submit("ddp_resume.py", _topology(None), args=["--steps", str(STEPS)], name="reference")
    assert wait(reference).state == RunState.SUCCEEDED, describe(reference)

    run = submit("ddp_resume.py", _topology(2), args=["--steps", str(STEPS), "--hold-at", "10"], name="chaos")
    wait_for(lambda: _checkpointed(run, "worker-1", 10), "worker-1's checkpoint at step 10")  # then it holds
    first_port = run.status().replicas[0].address
    said = _kill(run, "worker-1")
    assert said.startswith("sent SIGKILL to worker-1 of run")
    status = wait(run)
    assert status.state == RunState.SUCCEEDED, describe(run)
    assert status.attempt == 2 and status.max_attempts == 3
    first, second = status.attempts
    assert (first.attempt, first.failed, first.signal, first.exit_code) == (1, "worker-1", "SIGKILL", 137)
    assert first.retried and first.step is not None and first.step >= 10
    assert second.resumed_from is not None and 10 <= second.resumed_from <= first.step
    assert replica(status, "master-0").address != first_port  # a fresh rendezvous
    for rank in range(3):  # every rank of attempt 2 resumed from the same step, told it was attempt 2
        resumed = (run.paths.outputs_dir / f"resumed-{rank}-attempt2.json").read_text()
        assert f'"start": {second.resumed_from}' in resumed and '"attempt": 2' in resumed
    log = run.paths.log("worker", 1).read_text()
    marker = f"--- attempt 2 (from step {second.resumed_from:,}): worker-1 killed by SIGKILL at step {first.step:,} ---"
    assert marker in log and log.index(marker) + len(marker) + 1 == second.log_offsets["worker-1"]
    assert "attempt 1 rank 2 starts after step 0" in log  # the first attempt's log is kept
    assert f"attempt 2 rank 2 starts after step {second.resumed_from}" in log[second.log_offsets["worker-1"] :]
    newest = {(c.scope, c.step) for c in status.checkpoints}  # the newest of each replica
    assert newest == {("master-0", STEPS), ("worker-0", STEPS), ("worker-1", STEPS)}
    shown = px("status", run.run_id).stdout
    assert f"attempt 2 of 3, from step {second.resumed_from:,}" in shown
    assert f"  attempt 1: worker-1 killed by SIGKILL at step {first.step:,}; started again" in shown
    detail = json.loads(px("status", run.run_id, "--json").stdout)
    sent = RunDetail.model_validate(detail)  # what GET px/api/runs/<ref> sends
    assert (sent.attempt, sent.max_attempts, sent.attempts[0].failed) == (2, 3, "worker-1")
    assert ("worker-1", STEPS) in {(c.scope, c.step) for c in sent.checkpoints}
    # the run view (notebook output, sidebar): the attempt line and where attempt 2 began
    shown_view = RunViewSource(RunService(), run.run_id).view()
    assert shown_view.attempt == f"attempt 2 of 3, from step {second.resumed_from:,}"
    marks = [(a.attempt, a.resumed_from, a.ended) for a in shown_view.attempts]
    assert marks == [(1, None, f"worker-1 killed by SIGKILL at step {first.step:,}"), (2, second.resumed_from, "")]
    got, want = _final_model(run), _final_model(reference)
    assert got.keys() == want.keys() and all(torch.equal(got[k], want[k]) for k in want)


@pytest.mark.jobs
@pytest.mark.warm_only  # as the gang restart above
def test_a_permanent_exit_is_not_retried(px_home):
    """exit 1 (a bug) is not retried: Kubeflow's ExitCode policy; the run fails and says why."""
    run = submit("ddp_resume.py", _topology(2, workers=1), args=["--steps", "12", "--fail-at", "3"])
    status = wait(run)
    assert status.state == RunState.FAILED, describe(run)
    assert status.attempt == 1 and len(status.attempts) == 1 and not status.attempts[0].retried
    assert "not retried: exit code 1 of worker-0 is permanent" in status.message


@pytest.mark.jobs
@pytest.mark.warm_only  # as the gang restart above
def test_a_run_out_of_retries_fails_and_says_so(px_home):
    run = submit("ddp_resume.py", _topology(1, workers=1), args=["--steps", "400", "--step-sleep", "0.1"])
    wait_for(lambda: _checkpointed(run, "worker-0", 5), "worker-0's first checkpoint")
    _kill(run, "worker-0")
    wait_for(lambda: run.status().attempt == 2 and replica(run.status(), "worker-0").pid, "attempt 2 running")
    time.sleep(1)
    _kill(run, "worker-0", "9")
    status = wait(run)
    assert status.state == RunState.FAILED, describe(run)
    assert "out of retries: attempt 2 of 2 failed (termination.max_retries: 1)" in status.message
    assert [a.failed for a in status.attempts] == ["worker-0", "worker-0"]
    assert [a.retried for a in status.attempts] == [True, False]


@pytest.mark.jobs
@pytest.mark.warm_only  # as the gang restart above
def test_kill_names_a_replica_that_is_not_there(px_home):
    run = submit("ddp_resume.py", _topology(None, workers=1), args=["--steps", "2"])
    wait(run)
    done = px("kill", run.run_id, "worker-0")
    assert done.returncode == 1 and "has finished (Succeeded): nothing to kill" in done.stderr
    done = px("kill", run.run_id, "worker-0", "--signal", "NOPE")
    assert done.returncode == 2 and "--signal NOPE: not a signal name" in done.stderr
