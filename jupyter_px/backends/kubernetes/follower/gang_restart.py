"""The run-level retry of a native run (`termination.max_retries`): its whole gang made again.

A DDP rank that dies cannot be replaced on its own (its peers are inside a collective with it),
and on `native` nobody else would make its pod again. So when the run would fail, the failure is
one `Termination.retries` retries (Kubeflow's ExitCode policy by default: a signal, OOMKilled)
and attempts are left, the follower does what the local backend's supervisor does
(`backends/local/attempts.py`) with pods: it stores what every replica has logged so far, deletes
every pod of the attempt, waits until the API server has removed them all (a pod's name is free
again, and no old rank can meet a new one), and creates the run's pods again from those the
submit rendered (`shared/attempt_pods.py`), labelled with the attempt and told it (`PX_ATTEMPT`), a
fresh rendezvous since every rank starts anew. JobSet restarts its child Jobs the same way
(jobset v0.8.0, pkg/controllers/jobset_controller.go: delete every child Job, then create them
again with `jobset.sigs.k8s.io/restart-attempt` one higher).

Checkpoints: on a shared volume (`shared_claim`, mounted where the notebook sees it too), the
replicas' outputs outlive their pods, the newest step every scope has a checkpoint of is read
here and given to the next attempt (`PX_CHECKPOINT_STEP`), and `tracking.load_checkpoint()`
returns it; without one, a pod's outputs go with it and the next attempt starts from the start
(its status says so).

Trainer v2 restarts a gang itself: where the TrainJob's runtime sets `failurePolicy.maxRestarts`,
its JobSet answers a failed child Job by deleting every child Job and creating them again,
counting `status.restarts` (jobset v0.8.0, pkg/controllers/jobset_controller.go; the TrainJob
says nothing of it). The follower reads the JobSet (the TrainJob's name) with the job, and shows
each of its restarts as the run's next attempt, naming the replica whose failure caused it (kept
after its pod went, `terminations.py`).

What the user sees is what a local run shows: the status's attempt, its most attempts, each
failed attempt's record (which replica, why, at which step) and a marked line in every replica's
log where the next attempt begins. A follower that takes the run over in the middle of a restart
(the last attempt record says it was retried, the next one is not listed yet) goes on with it.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any, Protocol

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from ....runstore import ReplicaState, ReplicaStatus, RunPaths, RunStatus, RunStore, metrics_tail
from ....runstore.checkpoints import RESUME_AT_ENV, newest_step
from ....runstore.models import AttemptRecord
from ....topology import Topology
from ....topology.termination import Termination
from ...gang_retry import judge, record_failure
from ..shared.attempt_pods import ATTEMPT_ENV, PODS_FILE, pods_for_attempt
from ..shared.client import Cluster
from ..shared.create import create_with_retries, delete_objects, owner_reference
from ..shared.handle import RunHandle
from ..shared.podspec import SHARED_DIR_ENV
from ..shared.resources import Kind, kind_of
from .log_sink import ReplicaLog
from .log_streams import LogStreams
from .terminations import Terminations

log = logging.getLogger(__name__)

#: How long the failed attempt's pods may take to go before the run fails instead.
DELETION_WAIT_S = 300.0
#: How long a JobSet restart waits for the pod watch to show the failure that caused it (the
#: JobSet is read by a poll, the pods by a watch: either may tell first) before the attempt is
#: shown ended without naming a replica.
CULPRIT_WAIT_S = 15.0
#: The JobSet a TrainJob runs as (jobset.x-k8s.io, the version Trainer v2 creates).
JOBSET = Kind("JobSet", "jobsets", "jobset.x-k8s.io", "v1alpha2", "install JobSet")


class Follower(Protocol):
    """What of the run's follower (`follower.Follower`) a restart reads and asks."""

    run_id: str
    run_dir: Path
    store: RunStore
    paths: RunPaths
    handle: RunHandle
    topology: Topology
    cluster: Cluster
    pods: dict[str, dict[str, Any]]
    listed: bool
    logs: dict[tuple[str, int], ReplicaLog]
    gone: dict[tuple[str, int], ReplicaStatus]
    streams: LogStreams
    terminations: Terminations

    def new_attempt(self, message: str) -> None: ...


class GangRestart:
    """One run's attempts (see the module doc): made by this follower on native, read from the
    JobSet on Trainer v2; inert for every other run."""

    def __init__(self, follower: Follower, status: RunStatus):
        self.follower = follower
        self.termination = follower.topology.termination or Termination()
        #: this follower makes the gang again (native); else the JobSet may (`observe_jobset`)
        self.native = (
            follower.handle.backend == "native"
            and self.termination.max_retries > 0
            and (follower.run_dir / PODS_FILE).exists()
        )
        self.enabled = self.native  # the run has attempts to show
        self.attempt = status.attempt
        self.max_attempts = 1 + self.termination.max_retries if self.native else status.max_attempts
        self.attempts = list(status.attempts)
        #: the failed attempt whose pods are going: set from the failure until the next attempt is created
        self.pending: AttemptRecord | None = None
        self.deleting_since: float | None = None
        #: when a JobSet restart was first read whose failure the watch has not shown yet
        self.restart_read_at: float | None = None
        last = self.attempts[-1] if self.attempts else None
        if self.native and last is not None and last.retried and last.attempt == self.attempt:
            self.pending, self.deleting_since = last, time.monotonic()  # taken over mid-restart

    # ---- Trainer v2: the JobSet's own restarts -------------------------------------------------
    def observe_jobset(self) -> None:
        """Read the TrainJob's JobSet: its most restarts, and each restart it made since as the
        run's next attempt. An unanswered read changes nothing (the next one will tell)."""
        follower = self.follower
        try:
            jobset = JOBSET.get(follower.cluster, follower.handle.base, read_timeout=10)
        except (ApiException, HTTPError, OSError):
            return
        most = int(((jobset.get("spec") or {}).get("failurePolicy") or {}).get("maxRestarts") or 0)
        restarts = int((jobset.get("status") or {}).get("restarts") or 0)
        if most == 0 and restarts == 0:
            return
        self.enabled, self.max_attempts = True, 1 + most
        while self.attempt <= restarts:  # a restart not shown yet: the attempt it ended
            if not self.attempts:
                started = follower.store.status(follower.run_id).started_at
                self.attempts.append(AttemptRecord(attempt=1, started_at=started))
            record = self.attempts[-1]
            now = time.time()
            self.restart_read_at = self.restart_read_at or now
            # the failure ended before the restart was read (+1: a pod's times are whole seconds)
            culprit = follower.terminations.latest_failure_between(record.started_at, self.restart_read_at + 1)
            if culprit is None and now - self.restart_read_at < CULPRIT_WAIT_S:
                return  # the watch has not shown it yet: the next poll looks again
            if culprit is not None:
                record_failure(record, culprit, self._last_step())
            else:
                record.finished_at, record.message = now, "its JobSet restarted it"
            record.retried, self.restart_read_at = True, None
            self.attempt += 1
            self.attempts.append(AttemptRecord(attempt=self.attempt, started_at=now))

    @property
    def restarting(self) -> bool:
        return self.pending is not None

    def apply(self, status: RunStatus) -> None:
        """Carry the attempts into a status the follower is about to write."""
        if not self.enabled:
            return
        status.attempt, status.max_attempts, status.attempts = self.attempt, self.max_attempts, list(self.attempts)

    # ---- the run would fail ------------------------------------------------------------------
    def on_failure(self, views: dict[Any, tuple[dict[str, Any], ReplicaStatus]], message: str | None) -> str | None:
        """The run would fail: None when the whole gang starts again instead, else the run's
        message (saying why it was not retried, where that is the termination's doing)."""
        if not self.native:
            return message
        failed = [view for _, view in views.values() if view.state == ReplicaState.FAILED]
        failed += [r for r in self.follower.gone.values() if r.state == ReplicaState.FAILED]
        if not failed:
            return message
        culprit, why = judge(self.termination, failed, self.attempt, self.max_attempts)
        if not self.attempts:
            started = self.follower.store.status(self.follower.run_id).started_at
            self.attempts.append(AttemptRecord(attempt=1, started_at=started))
        record = self.attempts[-1]
        record_failure(record, culprit, self._last_step())
        if why is not None:
            return f"{message}; {why}" if message else why
        record.retried = True
        self.pending, self.deleting_since = record, time.monotonic()
        log.info("run %s: attempt %d failed (%s); deleting its pods", self.follower.run_id, self.attempt, culprit.key)
        self._delete_pods(views)
        return None

    def _delete_pods(self, views: dict[Any, tuple[dict[str, Any], ReplicaStatus]]) -> None:
        """Every pod of the attempt, once what its replica logged so far is stored."""
        follower = self.follower
        ended = (ReplicaState.SUCCEEDED, ReplicaState.FAILED)
        follower.streams.snapshot(views, 30.0, {key for key, (_, view) in views.items() if view.state not in ended})
        problems = delete_objects(follower.cluster, list(follower.pods.values()))
        for problem in problems:
            log.warning("run %s: deleting a pod of the failed attempt: %s", follower.run_id, problem)

    def status_message(self) -> str:
        assert self.pending is not None
        return f"attempt {self.attempt} failed: {self.pending.describe()}; starting attempt {self.attempt + 1}"

    # ---- while the failed attempt's pods go --------------------------------------------------
    def tick(self) -> str | None:
        """Create the next attempt's pods once every pod of the failed one is gone; a message
        when the restart cannot go on (the run fails with it), else None."""
        assert self.pending is not None and self.deleting_since is not None
        follower = self.follower
        if not follower.listed:
            return None
        if follower.pods:
            if time.monotonic() - self.deleting_since > DELETION_WAIT_S:
                names = ", ".join(sorted(follower.pods)[:3])
                return f"the failed attempt's pods were not removed within {DELETION_WAIT_S:.0f} s ({names})"
            if any(not p["metadata"].get("deletionTimestamp") for p in follower.pods.values()):
                delete_objects(follower.cluster, list(follower.pods.values()))  # a follower that took over
            return None
        record, self.pending = self.pending, None
        flushed = self._last_step()  # what its replicas logged until their pods were deleted counts too
        if flushed is not None and (record.step is None or flushed > record.step):
            record.step = flushed
        self.attempt += 1
        outputs = self._shared_outputs()
        step = newest_step(str(outputs)) if outputs is not None else None
        resumed = f"from step {step:,}" if step is not None else "from the start"
        line = f"--- attempt {self.attempt} ({resumed}): {record.describe()} ---\n"
        offsets = {f"{role}-{index}": replica_log.mark(line) for (role, index), replica_log in follower.logs.items()}
        self.attempts.append(
            AttemptRecord(attempt=self.attempt, started_at=time.time(), resumed_from=step, log_offsets=offsets)
        )
        env = {ATTEMPT_ENV: str(self.attempt)}
        if step is not None:
            env[RESUME_AT_ENV] = str(step)
        try:
            self._create(pods_for_attempt(follower.run_dir, self.attempt, env))
        except (ApiException, HTTPError, OSError) as error:
            return f"creating the pods of attempt {self.attempt} failed: {error}"
        follower.new_attempt(f"attempt {self.attempt} of {self.max_attempts}, {resumed}: {record.describe()}")
        log.info("run %s: attempt %d of %d started %s", follower.run_id, self.attempt, self.max_attempts, resumed)
        return None

    def _create(self, pods: list[dict[str, Any]]) -> None:
        """The attempt's pods, owned by the run's ConfigMap as the first attempt's are."""
        follower = self.follower
        owner = kind_of({"kind": "ConfigMap", "apiVersion": "v1"}).get(follower.cluster, follower.handle.base)
        reference = owner_reference(owner)
        for pod in pods:
            pod["metadata"]["ownerReferences"] = [reference]
            create_with_retries(follower.cluster, pod)

    def _shared_outputs(self) -> Path | None:
        """The replicas' outputs folder where it outlives their pods (a shared volume this
        machine sees at the same path), else None."""
        pods = json.loads((self.follower.run_dir / PODS_FILE).read_text())
        for pod in pods[:1]:
            for container in pod["spec"].get("containers", []):
                for item in container.get("env", []):
                    if item.get("name") == SHARED_DIR_ENV and item.get("value"):
                        outputs = Path(item["value"]) / "outputs"
                        return outputs if outputs.is_dir() else None
        return None

    def _last_step(self) -> int | None:
        """The last step any replica of the run logged (what the store's metrics files end with)."""
        paths = self.follower.paths
        files = []
        for role, index in self.follower.logs:
            path = paths.metrics(role, index)
            if path.exists():
                files.append(path)
        return metrics_tail.last_step(files)
