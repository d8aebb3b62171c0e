"""How each replica's container last ended, as the watch events showed it, kept after its pod goes.

An operator may delete a pod right after its container failed: training-operator v1.9.0 deletes
every pod of a job past its backoffLimit, the failed one included (pkg/controller.v1/common/job.go
ReconcileJobs -> DeletePodsAndServices), a JobSet deletes the Jobs still active when it fails,
and a finished pod is deleted at once (no grace period). The last state the follower then sees
of the pod is "being deleted" or nothing at all; the failure (exit code, reason, when) was in an
earlier watch event. So every event's pod is looked at (not only the last one of a tick), and the
latest failure of each replica's container is kept (exited non-zero: Failed; or waiting to
restart after one), also across the pods a Job makes again for a failed one, until the replica
succeeds. An end caused by the pod's own deletion (the kubelet's 143/137 after a delete request)
is none. The follower reports it when the job has failed and the replica's pod was deleted.

A container the kubelet restarted at once after a failure (OnFailure, a short back-off) is seen
running again, its failure only in `lastState`: kept apart (`restarted`), since the replica is not
failed; it is what a JobSet restart that follows names (`gang_restart.observe_jobset`). Every
failure seen is also kept in a short history, since the replica's next start may succeed (and
clear its latest failure) before the follower's poll of the JobSet tells it a restart happened.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from ....runstore import ReplicaState, ReplicaStatus
from ....runstore.models import Reason
from ..shared.pod_state import failed_starts, failure_restarted_after, parse_time, pod_replica

Replica = tuple[str, int]

#: How many failures the history keeps (every replica's, each event's: repeats included).
HISTORY = 256


class Terminations:
    """The latest failure of each replica's container, kept until the replica succeeds, and a
    short history of every failure seen."""

    def __init__(self) -> None:
        self._failed: dict[Replica, ReplicaStatus] = {}
        self._restarted: dict[Replica, ReplicaStatus] = {}  # failed, and running again
        self._history: deque[ReplicaStatus] = deque(maxlen=HISTORY)  # every failure seen, oldest first

    def seen(self, key: Replica, pod: dict[str, Any], ended_by_deletion: bool) -> None:
        """Note what this event's pod says of replica `key`'s container."""
        view = pod_replica(pod, *key)
        if view.state == ReplicaState.SUCCEEDED:
            self._failed.pop(key, None)
            self._restarted.pop(key, None)
        elif view.state == ReplicaState.RUNNING and (last := failure_restarted_after(pod)) is not None:
            self._restarted[key] = _ended(view, last, f"exited with code {last['exitCode']}; restarted in its pod")
            self._history.append(self._restarted[key])
        elif ended_by_deletion:
            return
        elif view.state == ReplicaState.FAILED:
            self._failed[key] = view
            self._history.append(view)
        elif view.state == ReplicaState.RESTARTING:
            failures, latest = failed_starts(pod)
            if latest is not None:  # failed, and waits to restart: Failed if its pod goes now
                message = f"exited with code {latest.get('exitCode')} (failure {failures}); its pod was then deleted"
                self._failed[key] = _ended(view, latest, message)
                self._history.append(self._failed[key])

    def failure(self, key: Replica) -> ReplicaStatus | None:
        """The replica's latest failure, if it has not succeeded since (a copy)."""
        found = self._failed.get(key)
        return found.model_copy() if found is not None else None

    def latest_failure_between(self, after: float | None, before: float) -> ReplicaStatus | None:
        """The last failure of any replica that ended from `after` (None: any time) to `before`,
        whether its replica has succeeded since or not (a copy)."""
        low = float("-inf") if after is None else after
        seen = [f for f in self._history if low <= (f.finished_at or 0) <= before]
        return max(seen, key=lambda f: f.finished_at or 0).model_copy() if seen else None


def _ended(view: ReplicaStatus, terminated: dict[str, Any], message: str) -> ReplicaStatus:
    """`view` as the failure `terminated` (a container's `terminated` record) says it ended."""
    view.state, view.exit_code = ReplicaState.FAILED, terminated.get("exitCode")
    view.reason = terminated.get("reason") or Reason.ERROR
    view.finished_at = parse_time(terminated.get("finishedAt")) or view.finished_at
    view.message = message
    return view
