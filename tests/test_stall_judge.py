"""What counts as a stall (`diagnostics.stalls.StallJudge`), read from a replica's real metrics file
as `tracking` writes it: a replica is judged on the steps of its current attempt only.

A Slurm job requeued after its node was lost (or a gang restarted) starts a new process whose
last step is its previous attempt's, minutes old: judged on it, the new process was marked
Stalled while it was still importing torch, and the stacks taken of it then crashed it once in CI
(faulthandler walks threads' frames without the GIL while torch starts its threads).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from jupyter_px.diagnostics.stalls import StallJudge
from jupyter_px.runstore import ReplicaState, ReplicaStatus


def _log_steps(path: Path, steps: range, ended_at: float, every_s: float = 1.0) -> None:
    """Steps as `tracking.log_metrics` writes them, the last one at `ended_at`."""
    with path.open("a") as metrics:
        for position, step in enumerate(steps):
            when = ended_at - (len(steps) - 1 - position) * every_s
            metrics.write(json.dumps({"step": step, "time": when, "loss": 1.0 / (step + 1)}) + "\n")


def _judge(tmp_path: Path, floor: float = 60.0) -> StallJudge:
    return StallJudge(lambda role, index: tmp_path / f"{role}-{index}.jsonl", floor=floor)


def _worker(started_at: float | None) -> ReplicaStatus:
    return ReplicaStatus(role="worker", index=0, state=ReplicaState.RUNNING, started_at=started_at)


def test_a_replica_quiet_past_the_floor_since_its_last_step_is_stalled(tmp_path):
    now = time.time()
    _log_steps(tmp_path / "worker-0.jsonl", range(20), ended_at=now - 90)
    worker = _worker(started_at=now - 200)
    began = _judge(tmp_path).mark([(worker, True)])
    assert began == ["worker-0: no step logged for 90 s (limit 60 s)"]
    assert worker.stalled_since == now - 90 and worker.stall_after_s == 60.0


def test_a_restarted_replica_is_not_judged_on_its_previous_attempts_steps(tmp_path):
    now = time.time()
    metrics = tmp_path / "worker-0.jsonl"
    _log_steps(metrics, range(20), ended_at=now - 300)  # attempt 1, then its node was lost
    worker = _worker(started_at=now - 90)  # attempt 2: started 90 s ago, no step of its own yet
    judge = _judge(tmp_path)
    assert judge.mark([(worker, True)]) == []
    assert worker.stalled_since is None and not judge.any_stalled

    _log_steps(metrics, range(10, 12), ended_at=now - 70)  # its first steps, resumed at 10; quiet since
    judge.next_check = 0.0
    assert judge.mark([(worker, True)]) == ["worker-0: no step logged for 70 s (limit 60 s)"]
    assert worker.stalled_since == now - 70


def test_a_replica_whose_owner_does_not_know_its_start_is_judged_on_its_last_step(tmp_path):
    now = time.time()
    _log_steps(tmp_path / "worker-0.jsonl", range(5), ended_at=now - 61)
    assert _judge(tmp_path).mark([(_worker(started_at=None), True)]) == [
        "worker-0: no step logged for 61 s (limit 60 s)"
    ]


def test_a_replica_that_is_not_running_or_logs_no_steps_is_never_stalled(tmp_path):
    now = time.time()
    _log_steps(tmp_path / "worker-0.jsonl", range(5), ended_at=now - 600)
    assert _judge(tmp_path).mark([(_worker(started_at=now - 700), False)]) == []
    silent = ReplicaStatus(role="master", index=0, state=ReplicaState.RUNNING, started_at=now - 700)
    assert _judge(tmp_path).mark([(silent, True)]) == []
