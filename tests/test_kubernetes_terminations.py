"""What a follower remembers of how each replica's container ended (`follower/terminations.py`),
fed the pods as the API server's watch events carry them.

A JobSet restart is read by a poll and the pods by a watch, so the failure that caused a restart
may be read after the replica's next start already succeeded: the restart must still name it.
"""

from __future__ import annotations

from typing import Any

from jupyter_px.backends.kubernetes.follower.terminations import Terminations
from jupyter_px.backends.kubernetes.shared.pod_state import parse_time

WORKER = ("worker", 0)


def pod(phase: str, exit_code: int, reason: str, finished: str, deleted: str | None = None) -> dict[str, Any]:
    """A pod whose one container ended with `exit_code` at `finished` (the kubelet's status)."""
    ended = {"exitCode": exit_code, "reason": reason, "startedAt": "2026-11-30T10:00:00Z", "finishedAt": finished}
    metadata = {"name": "jobset-worker-0-0"} if deleted is None else {"deletionTimestamp": deleted}
    return {
        "metadata": metadata,
        "spec": {"restartPolicy": "Never"},
        "status": {"phase": phase, "containerStatuses": [{"name": "replica", "state": {"terminated": ended}}]},
    }


def test_a_failure_is_named_after_the_replicas_next_start_succeeded():
    terminations = Terminations()
    terminations.seen(WORKER, pod("Failed", 137, "Error", "2026-11-30T10:00:05Z"), ended_by_deletion=False)
    terminations.seen(WORKER, pod("Succeeded", 0, "Completed", "2026-11-30T10:00:09Z"), ended_by_deletion=False)

    assert terminations.failure(WORKER) is None  # the replica has succeeded since
    start, restart_read = parse_time("2026-11-30T10:00:00Z"), parse_time("2026-11-30T10:00:07Z")
    culprit = terminations.latest_failure_between(start, restart_read)
    assert culprit is not None and (culprit.key, culprit.exit_code) == ("worker-0", 137), culprit


def test_only_a_failure_inside_the_attempt_and_not_caused_by_a_deletion_is_named():
    terminations = Terminations()
    terminations.seen(WORKER, pod("Failed", 1, "Error", "2026-11-30T09:59:00Z"), ended_by_deletion=False)
    deleted = pod("Failed", 143, "Error", "2026-11-30T10:00:06Z", deleted="2026-11-30T10:00:05Z")
    terminations.seen(WORKER, deleted, ended_by_deletion=True)
    terminations.seen(WORKER, pod("Failed", 2, "Error", "2026-11-30T10:00:30Z"), ended_by_deletion=False)

    start, restart_read = parse_time("2026-11-30T10:00:00Z"), parse_time("2026-11-30T10:00:10Z")
    assert terminations.latest_failure_between(start, restart_read) is None  # before, by deletion, after
    culprit = terminations.latest_failure_between(None, restart_read)
    assert culprit is not None and culprit.exit_code == 1, culprit
