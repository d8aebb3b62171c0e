"""The Kubernetes follower's decision waits for a failed replica's failure record until the
replica's log has been read to its end (`follower/failures.py`), not for a fixed time: in CI a
collective timeout's records came more than the old 5 s after the failures, and the rank its peers
waited for went unnamed ("PyTorchJobFailed"). Each replica's record is the file the log sink keeps
from its `@px-failure` line, in the run directory, as a follower's run has it."""

from __future__ import annotations

import json
import time
from pathlib import Path

from waiting import wait_for

from jupyter_px.backends.kubernetes.follower.failures import Failures
from jupyter_px.runstore import ReplicaState, ReplicaStatus, RunState
from jupyter_px.runstore.layout import FAILURES_DIR
from jupyter_px.topology.naming import ReplicaNames

#: gloo's words when a collective gives up (torch 2.13, `unbound_buffer.cc`)
TIMED_OUT = "RuntimeError: [gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 20000ms for recv operation"


def failed(role: str, index: int, finished_at: float) -> ReplicaStatus:
    """A replica whose pod ended with exit code 1, as the follower first sees it: no record yet."""
    return ReplicaStatus(
        role=role,
        index=index,
        state=ReplicaState.FAILED,
        exit_code=1,
        message="exited with code 1",
        started_at=finished_at - 30,
        finished_at=finished_at,
    )


def keep_record(run_dir: Path, key: str, exception: str, line: int) -> None:
    folder = run_dir / FAILURES_DIR
    folder.mkdir(exist_ok=True)
    (folder / f"{key}.json").write_text(json.dumps({"exception": exception, "label": "cell [4]", "line": line}))


def no_stacks(targets: dict, why: str) -> dict:
    """The stacks of the replicas still running: none runs here (every pod has ended)."""
    assert targets == {}, targets
    return {"replicas": []}


def test_a_skipped_barrier_is_named_once_every_log_is_read_however_late(tmp_path):
    """Master and worker-0 wait in the barrier (line 9), worker-1 in the all_reduce it ran instead
    (line 10); all three time out. Until their logs are read the run stays Running, so long as
    that takes; then worker-1 is named from the records alone."""
    read: set[tuple[str, int]] = set()
    failures = Failures(tmp_path, no_stacks, ReplicaNames.of(None), lambda key: key in read)
    now = time.time()
    replicas = [failed("master", 0, now), failed("worker", 0, now + 0.2), failed("worker", 1, now + 0.4)]
    operator = (RunState.FAILED, "PyTorchJobFailed", "PyTorchJob failed because 1 Worker replica(s) failed.")

    assert failures.decide(*operator, replicas)[0] == RunState.RUNNING
    keep_record(tmp_path, "master-0", TIMED_OUT, 9)
    keep_record(tmp_path, "worker-0", TIMED_OUT, 9)
    keep_record(tmp_path, "worker-1", TIMED_OUT.replace("recv", "send"), 10)
    read.update({("master", 0), ("worker", 0)})
    assert failures.decide(*operator, replicas)[0] == RunState.RUNNING  # worker-1's log is still being read

    read.add(("worker", 1))
    # the stacks of the replicas still running are asked for first (none is), in a thread
    state, reason, message = wait_for(lambda: (d := failures.decide(*operator, replicas))[0] != RunState.RUNNING and d)
    assert (state, reason) == (RunState.FAILED, "CollectiveTimeout"), message
    assert message.startswith("worker-1 never joined the collective its peers waited in"), message
    assert "was in another collective than its peers (cell [4] line 10; they waited at cell [4] line 9)" in message
    assert replicas[2].message.endswith("Timed out waiting 20000ms for send operation (cell [4], line 10)")


def test_a_failure_without_a_record_is_decided_as_soon_as_its_log_is_read(tmp_path):
    """`sys.exit(1)` prints no record: once the log is read to its end, the run is decided at once,
    with the operator's words (before, it waited 5 s for a record that never comes)."""
    read: set[tuple[str, int]] = set()
    failures = Failures(tmp_path, no_stacks, ReplicaNames.of(None), lambda key: key in read)
    replicas = [failed("worker", 0, time.time())]
    operator = (RunState.FAILED, "PyTorchJobFailed", "PyTorchJob failed because 1 Worker replica(s) failed.")

    assert failures.decide(*operator, replicas)[0] == RunState.RUNNING
    read.add(("worker", 0))
    assert failures.decide(*operator, replicas) == operator
    assert replicas[0].failure is None and replicas[0].message == "exited with code 1"
