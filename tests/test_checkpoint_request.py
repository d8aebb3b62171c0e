"""The pieces of a resumable Slurm run that need no cluster: a replica asked for a checkpoint
(SIGUSR1, `tracking.checkpoint_requested`), the step a gang resumes from when its ranks saved a
step apart, the batch script of a run with retries, and how a requeued attempt reads.
(On a real cluster: tests/test_slurm_requeue.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

from jupyter_px.backends.slurm.plan import job_plan
from jupyter_px.backends.slurm.script import job_script
from jupyter_px.backends.slurm.settings import load_settings
from jupyter_px.runstore.checkpoints import newest_step
from jupyter_px.runstore.models import AttemptRecord
from jupyter_px.topology import parse_topology


def _tracking_env(monkeypatch, outputs, index: int) -> None:
    monkeypatch.setenv("PX_RUN_ID", "run-1")
    monkeypatch.setenv("PX_OUTPUTS_PATH", str(outputs))
    monkeypatch.setenv("PX_TASK_TYPE", "worker")
    monkeypatch.setenv("PX_TASK_INDEX", str(index))
    for name in ("PX_RESUME_FROM", "PX_CHECKPOINT_STEP", "LOCAL_RANK", "PX_MPI_RANK"):
        monkeypatch.delenv(name, raising=False)


def test_sigusr1_is_a_checkpoint_request_until_the_next_save(tmp_path):
    """In a process armed as a Slurm replica is: the signal raises the flag, nothing ends, and the
    save answers it."""
    code = textwrap.dedent(
        """
        import os, signal
        from jupyter_px import tracking
        from jupyter_px.processes import checkpoint_signal
        checkpoint_signal.arm()
        before = tracking.checkpoint_requested()
        os.kill(os.getpid(), signal.SIGUSR1)
        asked = tracking.checkpoint_requested()
        tracking.save_checkpoint({"w": 1}, 7)
        print(before, asked, tracking.checkpoint_requested(), tracking.load_checkpoint().step)
        """
    )
    env = {**os.environ, "PX_RUN_ID": "run-1", "PX_OUTPUTS_PATH": str(tmp_path)}
    env.update(PX_TASK_TYPE="worker", PX_TASK_INDEX="0")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True", "False", "7"]


def test_an_unarmed_process_keeps_sigusr1s_default():
    done = subprocess.run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGUSR1)"])
    assert done.returncode == -signal.SIGUSR1


def test_ranks_that_saved_a_step_apart_resume_from_the_newest_step_they_all_have(tmp_path, monkeypatch):
    from jupyter_px import tracking

    outputs = tmp_path / "outputs"
    _tracking_env(monkeypatch, outputs, index=0)
    for step in (50, 100, 131):  # asked for a checkpoint between its steps 130 and 131
        tracking.save_checkpoint({"s": step}, step)
    monkeypatch.setenv("PX_TASK_INDEX", "1")
    for step in (50, 100, 130):
        tracking.save_checkpoint({"s": step}, step)
    assert newest_step(str(outputs)) == 100  # 130 is not worker-0's, 131 not worker-1's
    tracking.save_checkpoint({"s": 131}, 131)
    assert newest_step(str(outputs)) == 131


def test_the_batch_script_of_a_run_with_retries_requeues_and_traps_the_signal():
    topology = parse_topology(
        {"framework": "pytorch", "backend": "slurm", "termination": {"maxRetries": 2}, "environment": {}}
    )
    script = job_script("r", "/r", job_plan(topology), load_settings(checkpoint_grace_s=45))
    lines = script.splitlines()
    assert lines[4:7] == ["#SBATCH --requeue", "#SBATCH --signal=B:USR1@45", "#SBATCH --open-mode=append"]
    assert "trap checkpoint_and_requeue USR1" in lines
    assert lines[-4].startswith("srun ") and lines[-4].endswith(" &")  # in the background: the trap runs at once
    assert lines[-1] == "exit $code"
    without = job_script(
        "r", "/r", job_plan(parse_topology({"framework": "pytorch", "backend": "slurm"})), load_settings()
    )
    assert "#SBATCH --no-requeue" in without and "trap" not in without and "--signal" not in without


def test_a_requeued_attempt_reads_as_slurm_said_it():
    ended = AttemptRecord(
        attempt=1, failed="Slurm job 9", reason="TimeLimit", message="requeued (TimeLimit)", step=1287
    )
    assert ended.describe() == "Slurm job 9 requeued (TimeLimit) at step 1,287"
    killed = AttemptRecord(attempt=1, failed="worker-1", reason="Signaled", exit_code=137, signal="SIGKILL", step=5)
    assert killed.describe() == "worker-1 killed by SIGKILL at step 5"
