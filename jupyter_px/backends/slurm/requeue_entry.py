"""The batch shell's trap for Slurm's signal before the job's time limit, in a run with retries:
`python <run>/slurm/requeue.py RUN_DIR` (`script.job_script`: `--signal=B:USR1@<grace>` and
`trap ... USR1`).

It asks every replica for a checkpoint (`scancel --signal=USR1`: each replica's
`tracking.checkpoint_requested()` turns true), waits until each scope of checkpoints has one saved
since (or the grace nearly ran out), then requeues the job (`scontrol requeue`) while the run has
retries left. `requeue.json` in the attempt's records tells the follower first (`requeues.py`), so
the replicas the requeue stops are not taken for failures.

Copied into each run's directory beside `entry.py` (which it imports: the same folder is first on
`sys.path`); standard library only, plus the run store's checkpoint listing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import entry  # the run's slurm/entry.py (backends/slurm/task_entry.py)

#: Seconds before the end of the checkpoint grace the trap stops waiting for the replicas'
#: checkpoints and requeues the job (the signal may come up to 60 s early, sbatch(1)).
REQUEUE_MARGIN_S = 15.0


def checkpoint_and_requeue(run_dir: str, env: dict[str, str]) -> None:
    """The batch shell's trap for Slurm's signal before the time limit (`--signal=B:USR1@<grace>`):
    ask every replica for a checkpoint (SIGUSR1, `tracking.checkpoint_requested`), wait until each
    scope of checkpoints has one saved since (or the grace nearly ran out), then requeue the job
    (`scontrol requeue`) while the run has retries left. `requeue.json` tells the follower first,
    so the replicas the requeue stops are not taken for failures."""
    from jupyter_px.runstore.checkpoints import all_checkpoints

    plan = entry.read_json(os.path.join(run_dir, "slurm", "plan.json"))
    folder, job = entry.attempt_dir(run_dir, env), entry.leader_job_id(env)
    os.makedirs(folder, exist_ok=True)
    asked = time.time()
    grace = float(plan.get("checkpoint_grace_s") or 90)
    left = _seconds_left(job)
    # the signal comes at most 60 s before `grace` (sbatch(1)); much earlier, it is a preemption
    # (slurm.conf(5) SlurmctldParameters=preempt_send_user_signal), which Slurm's PreemptMode
    # requeues (or not) itself: only the checkpoint is ours then
    preempted = left is not None and left > grace + 60 + REQUEUE_MARGIN_S
    reason = "Preempted" if preempted else "TimeLimit"
    again = not preempted and entry.restarts(env) < int(plan.get("max_retries") or 0)
    entry.write_json(os.path.join(folder, "requeue.json"), {"reason": reason, "asked_at": asked, "requeue": again})
    near = "is being preempted" if preempted else "is near its time limit"
    print(f"jupyter-px: Slurm job {job} {near}: asking the replicas for a checkpoint", flush=True)
    subprocess.run(["scancel", "--signal=USR1", job], check=False)
    outputs = os.path.join(run_dir, "outputs")
    deadline = asked + max(5.0, grace - REQUEUE_MARGIN_S)
    while time.time() < deadline:
        newest: dict[str, float] = {}
        for checkpoint in all_checkpoints(outputs):
            newest[checkpoint.scope] = max(newest.get(checkpoint.scope, 0.0), checkpoint.time)
        exits = [name for name in os.listdir(folder) if name.startswith("exit-")]
        if (newest and min(newest.values()) >= asked) or len(exits) >= len(plan["tasks"]):
            break
        time.sleep(0.2)
    if preempted:
        return
    if not again:
        print(f"jupyter-px: no retries left (termination.max_retries: {plan.get('max_retries')}); not requeued")
        return
    print(f"jupyter-px: requeueing Slurm job {job} (scontrol requeue)", flush=True)
    subprocess.run(["scontrol", "requeue", job], check=False)


def _seconds_left(job: str) -> float | None:
    """Seconds until the job's end time (`scontrol show job`'s EndTime, local time), None when
    it cannot be read."""
    shown = subprocess.run(["scontrol", "show", "job", "--oneliner", job], capture_output=True, text=True, check=False)
    end = entry._parse_record(shown.stdout.splitlines()[0] if shown.stdout else "").get("EndTime", "")
    try:
        return time.mktime(time.strptime(end, "%Y-%m-%dT%H:%M:%S")) - time.time()
    except ValueError:
        return None


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        entry.die("usage: requeue.py RUN_DIR")
    checkpoint_and_requeue(os.path.abspath(args[0]), dict(os.environ))


if __name__ == "__main__":
    main()
