"""A run's follower: `python -m jupyter_px.backends.kubernetes.follower RUN_DIR`, one detached
process per run, or a thread of a Jupyter server that follows its runs (`host.py`).

Like the local backend's supervisor, it outlives the kernel that submitted the run, and it is
the only writer of the run's status. It watches the run's pods (a watch on the run's label) and,
for Kubeflow, the job's conditions; it writes per-replica states into the run store (which pod is
which replica: `replica_pods.py`, the mapping rendering labels pods with); it streams every
replica's log into the store as it comes (`log_sink.py`), so logs survive pod cleanup, and the
`@px-metrics` lines of those logs become the store's metrics and TensorBoard event files, so plots
and TensorBoard work without a shared disk.

Restartable and idempotent: a file lock admits one follower per run, and its starter records it
(pid and creation time, `jupyter_px.processes.detached`) as the run's owner before it may run; the log sink
resumes each replica's log where the last follower left it, so no line is lost or doubled. That
is also how a run changes hands: asked by a Jupyter server's host (`handover.py`), a follower of
its own closes its log sinks, records the host as the owner and exits; a host that stops sets
`leave` on its followers and gives each run back to a follower of its own.

It ends by itself: when the run finishes, when its run directory is deleted (nothing is left to
write to; it never recreates it), and when the API server has not answered for
`follower_give_up_s` (`PX_K8S_FOLLOWER_GIVE_UP_S`, see contact.py). In that last case the run keeps
its state (the cluster may still be running it) with reason `LostContact` and a message saying
so; a read of the run then reports "nobody is following this run", and the next explicit keeper
(`reconcile`: the Jupyter server's keeper, `Run.wait`, `jupyter px follow`) starts a follower again.

It is event-driven: a list-then-watch of the run's pods (`feeds.py`: its own, or its share of a
server's namespace watch), a poll of the Kubeflow job (and its torchrun groups) every `JOB_POLL_S`,
otherwise one wake-up per `IDLE_TICK_S` for stop requests, handovers and the above.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any

from urllib3.exceptions import HTTPError

from ....diagnostics.stall_stacks import StallStacks
from ....diagnostics.stalls import StallJudge
from ....processes import detached
from ....runstore import ReplicaState, ReplicaStatus, RunDamaged, RunNotFound, RunState, RunStatus, RunStore
from ....runstore.models import Reason, RunOwner
from ....topology import parse_topology
from ....topology.naming import ReplicaNames
from ...base import BackendError
from ...outcome import run_outcome
from ..shared.cleanup import delete_run
from ..shared.client import Cluster, connect
from ..shared.contact import lost_contact, refusal
from ..shared.create import delete_objects
from ..shared.handle import FOLLOWER_DIR, STOP_FILE, RunHandle
from ..shared.pod_state import NODE_LOST, fail_exhausted, job_outcome, pod_replica, pods_state, restarts_exhausted
from ..shared.pod_state import main_ended as _main_ended
from ..shared.replica_pods import replica_pods
from ..shared.settings import load_settings
from ..shared.stacks import stacks_taker
from . import handover
from .elastic_rounds import ElasticRounds
from .failures import Failures
from .feeds import Feed, OwnWatch
from .gang_restart import GangRestart
from .log_sink import ReplicaLog, RunGone
from .log_streams import LogStreams
from .pod_watch import latest_warning, read_job
from .pods import ended_by_deletion, keeps_running_pods, leaders, slim
from .terminations import Terminations

log = logging.getLogger(__name__)

#: Longest sleep of the main loop without an event: how soon a stop request, a deleted run
#: directory or a lost API server is noticed. Pod changes wake it at once.
IDLE_TICK_S = 1.0
#: Kubeflow jobs are read, not watched: their conditions change a few times per run.
JOB_POLL_S = 2.0
#: While a run waits, the Warning events of its objects are read this often: a quota, Pod
#: Security or webhook denial of the operator's pod creates (FailedCreate) is the reason it waits.
EVENTS_POLL_S = 5.0
LOG_DRAIN_S = 30.0
POD_DELETED = Reason.POD_DELETED


class Follower:
    """One run's follower (see the module doc). `feed`: where its pod events come from (None: a
    watch of its own); `owner`: whom it records as the run's owner (None: this process). A host
    of followers ends it with `leave` (the run goes on, to another follower), then `close`s it."""

    def __init__(self, store: RunStore, run_id: str, feed: Feed | None = None, owner: RunOwner | None = None):
        self.store, self.run_id = store, run_id
        self.paths = store.paths(run_id)
        self.run_dir = self.paths.root
        self.handle = RunHandle.load(self.run_dir)
        settings = load_settings(namespace=self.handle.namespace, context=self.handle.context)
        self.cluster: Cluster = connect(settings)
        self.give_up_s = float(settings.follower_give_up_s)
        # from the metrics the logs' lines became; the stacks asked in the pods when a stall begins
        take = stacks_taker(self.cluster, self.handle, self.run_dir, run_id)
        self.stalls = StallStacks(StallJudge(self.paths.metrics), take, run_id)
        self.hosted = feed is not None
        self.feed: Feed = feed or OwnWatch(self.cluster, self.handle.base, run_id)
        self.contact, self.events = self.feed.contact, self.feed.events
        self.leave = threading.Event()  # set by a host: stop following, the run unfinished
        self.topology = parse_topology(store.record(run_id).topology)
        self.names = ReplicaNames.of(self.topology)  # how its messages call replicas (`chief`)
        self.take = take
        self.replica_pods = replica_pods(self.handle.backend)
        self.state_dir = self.run_dir / FOLLOWER_DIR
        self.state_dir.mkdir(exist_ok=True)
        self.logs = {
            (s.role, s.index): ReplicaLog(self.paths, s.role, s.index, self.state_dir) for s in self.topology.replicas()
        }
        self.pods: dict[str, dict[str, Any]] = {}
        self.listed = False  # the run's pods have been listed once
        #: native: each replica's max_restarts, which the follower enforces (the kubelet restarts
        #: an OnFailure pod without limit); a job's operator enforces its own backoffLimit
        self.max_restarts: dict[tuple[str, int], int] = (
            {(s.role, s.index): s.max_restarts for s in self.topology.replicas()}
            if self.handle.backend == "native"
            else {}
        )
        #: native replicas seen failing past max_restarts: (failures, that failure's record), as
        #: first seen (a later restart, before the pod is deleted, does not undo it)
        self.exhausted: dict[tuple[str, int], tuple[int, dict[str, Any]]] = {}
        self.streams = LogStreams(self.cluster, self.logs, leaders(self.topology), self.state_dir, wake=self._wake)
        self.failures = Failures(self.run_dir, take, self.names, self.streams.read_to_end)
        self.job: dict[str, Any] | None = None
        self.seen_pods: set[tuple[str, int]] = set()
        self.stopping = False  # pods deleted from now on were deleted by this run (a stop, its end)
        self.stop_requested = False  # ... on a user's request
        self.last_job_poll = 0.0
        self.next_events_poll = 0.0
        self.waiting_on: tuple[str, str] | None = None  # (reason, message) of the latest Warning event
        #: pods deleted by someone else while the run went on: so they stay, once the run ends
        self.foreign_deletions: set[str] = set()
        #: replicas whose pod vanished (deleted while the watch was away, or gone at once): as recorded
        self.gone: dict[tuple[str, int], ReplicaStatus] = {}  # replica keys (native: one pod per replica, ever)
        #: how each replica's container last ended, from every watch event (its pod may go at once)
        self.terminations = Terminations()
        me = detached.ProcessIdentity.current()
        self.owner = owner or RunOwner(kind="follower", pid=me.pid, started_at=me.started_at)
        self.gang = GangRestart(self, store.status(run_id))  # the run's attempts (native, Trainer v2)
        self.rounds = ElasticRounds(self, self.gang)  # ... and an elastic PyTorchJob's (kubeflow)

    # ---- watching --------------------------------------------------------------------------

    def _poll_events(self) -> None:
        """The reason a waiting run waits: the latest Warning event about one of its objects."""
        self.next_events_poll = time.monotonic() + EVENTS_POLL_S
        found = latest_warning(self.cluster, self.handle.base)
        if found is not None:
            self.waiting_on = found

    def _poll_job(self) -> None:
        kind = self.handle.job()
        if kind is None:
            return
        self.last_job_poll = time.monotonic()
        self.job = read_job(self.cluster, kind, self.handle.base, self.contact) or self.job
        if self.handle.job_kind == "TrainJob":  # its JobSet may restart the gang itself
            self.gang.observe_jobset()
        self.rounds.observe()  # torchrun's agents may have formed the group again

    # ---- status ----------------------------------------------------------------------------

    def _views(self) -> dict[tuple[str, int], tuple[dict[str, Any], ReplicaStatus]]:
        """Each replica that has a pod: the pod, and the replica as the pod's status shows it."""
        out = {}
        for pod in self.pods.values():
            key = self.replica_pods.replica_of(pod, self.topology)
            if key in self.logs:
                view = pod_replica(pod, *key)
                self.failures.explain(view)  # what its code raised, once its log has said
                if key in self.exhausted:
                    fail_exhausted(view, *self.exhausted[key], self.max_restarts[key])
                if ended_by_deletion(pod, view):
                    failed = self._failure_of(key)
                    if failed is not None:  # it had failed before its pod's deletion was asked for
                        view = failed
                    else:
                        self._deleted(view)
                out[key] = (pod, view)
        return out

    def _job_ended(self) -> bool:
        return bool(self.handle.job_kind) and job_outcome(self.job) is not None

    def _failure_of(self, key: tuple[str, int]) -> ReplicaStatus | None:
        """A job that failed (not a stop) whose operator deleted the pod of a replica that had
        failed: the replica's latest failure, as the watch showed it (`terminations.py`)."""
        outcome = job_outcome(self.job) if self.handle.job_kind and not self.stop_requested else None
        return self.terminations.failure(key) if outcome is not None and outcome.state == RunState.FAILED else None

    def _deleted(self, replica: ReplicaStatus) -> None:
        """A replica whose pod was deleted before it ended by itself: by this run (a stop, the
        rest of a run that ended), by the job's operator after the job ended (cleanPodPolicy),
        or by someone else (kubectl, the eviction API): then a native replica has failed (nobody
        makes its pod again), while a job's operator decides (it may create the pod again)."""
        foreign = replica.key in self.foreign_deletions
        if not foreign and (self.stopping or self._job_ended()):
            self.failures.stopped(replica, by_user=self.stop_requested)
        elif self.handle.job_kind:  # not final: once the job has ended, it was its cleanup
            replica.state, replica.reason = ReplicaState.LOST, POD_DELETED
            replica.message = "its pod was deleted (not by this run); the job's operator decides what follows"
        else:
            self.foreign_deletions.add(replica.key)
            replica.state, replica.reason = ReplicaState.FAILED, POD_DELETED
            replica.message = "its pod was deleted, not by this run (kubectl, an eviction)"
        replica.finished_at = replica.finished_at or time.time()

    def _write_status(
        self,
        views,
        run_state: RunState,
        reason: str | None,
        message: str | None,
        final: bool,
        following: bool = True,
    ) -> None:
        status = self.store.status(self.run_id)
        if not status.replicas:
            status = RunStatus.initial(self.run_id, list(self.logs))
        status.owner = self.owner if following and not final else None
        for position, replica in enumerate(status.replicas):
            key = (replica.role, replica.index)
            if key in views:
                self.seen_pods.add(key)
                pod, view = views[key]
                view.started_at = replica.started_at or view.started_at
                view.address = pod["metadata"]["name"]
                replica = status.replicas[position] = view
            elif key in self.seen_pods and replica.state != ReplicaState.FAILED and (failed := self._failure_of(key)):
                replica = status.replicas[position] = failed  # failed, then the operator deleted its pod
                self.gone[key] = replica
            elif key in self.seen_pods and replica.state not in (
                ReplicaState.SUCCEEDED,
                ReplicaState.FAILED,
                ReplicaState.STOPPED,
            ):
                if key in self.exhausted:  # failed past max_restarts, then deleted by this run
                    fail_exhausted(replica, *self.exhausted[key], self.max_restarts[key])
                else:
                    self._deleted(replica)  # its logs so far are kept
                self.gone[key] = replica
            elif replica.state == ReplicaState.LOST and replica.reason == POD_DELETED and self._job_ended():
                self._deleted(replica)  # the operator's cleanup after the job ended, seen first
            self.failures.told(replica, final, by_user=run_state == RunState.STOPPED)
        # the run's times are its containers' (the kubelet's startedAt / finishedAt), not when this
        # follower noticed: a follower started late, or a run that ended before it looked, says
        # when the run really ran
        starts = [r.started_at for r in status.replicas if r.started_at]
        if starts:
            status.started_at = min(starts) if status.started_at is None else min(status.started_at, *starts)
        elif run_state == RunState.RUNNING and status.started_at is None:
            status.started_at = time.time()
        status.state, status.reason, status.message = run_state, reason, message
        if final:
            ends = [r.finished_at for r in status.replicas if r.finished_at]
            status.finished_at = min(time.time(), max(ends)) if ends else time.time()
            if status.started_at is not None:
                status.finished_at = max(status.finished_at, status.started_at)
        self.gang.apply(status)
        self.store.write_status(status)

    def new_attempt(self, message: str) -> None:
        """The gang was made again (`gang_restart.py`): its replicas start Pending, anew."""
        for kept in (self.seen_pods, self.gone, self.exhausted, self.foreign_deletions):
            kept.clear()
        self.terminations = Terminations()
        self.failures = Failures(self.run_dir, self.take, self.names, self.streams.read_to_end)
        status = self.store.status(self.run_id)
        status.replicas = [ReplicaStatus(role=r.role, index=r.index) for r in status.replicas]
        status.state, status.reason, status.message = RunState.PENDING, None, message
        self.gang.apply(status)
        self.store.write_status(status)

    def _outcome(self, views) -> tuple[RunState, str | None, str | None]:
        """The run's state, reason and message: a Kubeflow job's or TrainJob's own conditions say
        how it ended (its operator applies the success policy); native pods, the shared rule."""
        replicas = [
            views[key][1] if key in views else self.gone.get(key) or ReplicaStatus(role=key[0], index=key[1])
            for key in self.logs
        ]
        outcome = job_outcome(self.job) if self.handle.job_kind else run_outcome(replicas, self.names)
        if outcome is None and self.handle.job_kind:
            # the operator never hears of a lost node's pods ending: the run decides on them
            outcome = run_outcome([r for r in replicas if r.reason == NODE_LOST], self.names)
        if outcome is None:
            return pods_state(replicas), None, None
        return outcome.state, outcome.reason, outcome.message

    # ---- the loop --------------------------------------------------------------------------

    def _drain_events(self, wait: float) -> bool:
        """Apply the watch events that arrived (waiting up to `wait` s for the first); whether any did."""
        try:
            kind, obj = self.events.get(timeout=wait) if wait > 0 else self.events.get_nowait()
        except queue.Empty:
            return False
        try:
            while True:
                if kind == "SNAPSHOT":
                    self.pods = {pod["metadata"]["name"]: slim(pod) for pod in obj}
                    self.listed = True
                    for pod in obj:
                        self._seen(pod)
                elif kind == "DELETED":
                    self._seen(obj)
                    self.pods.pop(obj["metadata"]["name"], None)
                elif obj is not None:
                    self.pods[obj["metadata"]["name"]] = slim(obj)
                    self._seen(obj)
                kind, obj = self.events.get_nowait()
        except queue.Empty:
            return True

    def _wake(self) -> None:
        """A log read ended: the loop looks again now, and starts the next read that is due."""
        self.events.put(("WAKE", None))

    def _seen(self, pod: dict[str, Any]) -> None:
        """What each watch event of a pod says before a later one hides it: how its replica's
        container ended (`terminations.py`), and on native the (max_restarts + 1)-th failure that
        exhausted it, even when the kubelet restarts the container again before the next tick."""
        key = self.replica_pods.replica_of(pod, self.topology)
        if key not in self.logs:
            return
        self.terminations.seen(key, pod, ended_by_deletion(pod, pod_replica(pod, *key)))
        exhausted = key in self.max_restarts and key not in self.exhausted
        if exhausted and (found := restarts_exhausted(pod, self.max_restarts[key])) is not None:
            self.exhausted[key] = found

    def run(self) -> int:
        if (self.run_dir / STOP_FILE).exists() and self.store.status(self.run_id).state.finished:
            return 0
        self.feed.start()
        try:
            return self._loop()
        except (RunGone, RunNotFound, RunDamaged, FileNotFoundError):
            if self.paths.record.exists():
                raise
            return self._run_gone()
        finally:
            self.feed.stop()

    def close(self) -> None:
        """What a host does once `run` returned: no more writes, no more connections."""
        self.feed.stop()
        for replica_log in self.logs.values():
            replica_log.close()
        self.cluster.close()

    def _leave(self, to: RunOwner | None = None) -> int:
        """Stop following, the run unfinished: its host hands it back (`leave`), or this follower
        hands it to a host (`to`, then recorded as the run's owner: one owner at any time).
        Nothing is written after: the next follower resumes every log where this one left it."""
        self.feed.stop()
        for replica_log in self.logs.values():
            replica_log.close()  # a write under way completes first
        if to is not None:
            status = self.store.status(self.run_id)
            status.owner = to
            self.store.write_status(status)
        log.info("run %s: handed %s", self.run_id, f"to the server {to.pid}" if to else "back")
        return 0

    def _loop(self) -> int:
        last_written: Any = None
        next_job_poll = 0.0
        while True:
            if not self.paths.record.exists():
                return self._run_gone()
            wait = IDLE_TICK_S
            if self.handle.job_kind:
                wait = min(wait, max(0.0, next_job_poll - time.monotonic()))
            self._drain_events(wait)
            if self.leave.is_set():
                return self._leave()
            if not self.hosted and (host := handover.requested(self.run_dir, self.store.home)) is not None:
                return self._leave(to=host)
            if self.handle.job_kind and time.monotonic() >= next_job_poll:
                self._poll_job()
                next_job_poll = time.monotonic() + JOB_POLL_S
            self.stopping = self.stop_requested = stopping = (self.run_dir / STOP_FILE).exists()
            if self.gang.restarting and not stopping:  # the failed attempt's pods are going
                if (problem := self.gang.tick()) is not None:
                    return self._finish(self._views(), RunState.FAILED, Reason.ERROR, problem)
                continue
            if self.handle.job_kind and not stopping and self._deletion_seen():
                self._poll_job()  # pods going: is it the operator's cleanup of a job that ended?
            views = self._views()
            if self.contact.reachable:  # no point opening log streams to a server that does not answer
                self.streams.update(views)
            state, reason, message = self.failures.decide(*self._outcome(views), (v for _, v in views.values()))
            if state == RunState.PENDING and time.monotonic() >= self.next_events_poll:
                self._poll_events()
            if state == RunState.PENDING and self.waiting_on is not None and reason is None:
                reason, message = self.waiting_on
            if stopping:  # we delete the objects: their disappearance (a job's "Deleted") is the stop
                state, reason, message = RunState.STOPPED, Reason.STOPPED_BY_USER, "stopped on request"
            if state == RunState.FAILED and not stopping and (message := self.gang.on_failure(views, message)) is None:
                self._write_status(views, RunState.RUNNING, None, self.gang.status_message(), final=False)
                continue
            if state.finished:
                return self._finish(views, state, reason, message)
            if (lost_for := self.contact.unreachable_for()) >= self.give_up_s:
                lost = lost_contact(self.cluster.host, lost_for, self.contact.last_error)
                return self._stop_following(views, state, Reason.LOST_CONTACT, lost)
            if (refusal := self._refusal()) is not None:
                return self._stop_following(views, state, *refusal)
            self.stalls.mark((view, view.state == ReplicaState.RUNNING) for _, view in views.values())
            snapshot = (
                state,
                reason,
                self.gang.attempt,
                [(k, v.state, v.reason, v.restarts, v.stalled_since) for k, (_, v) in sorted(views.items())],
            )
            if snapshot != last_written:
                self._write_status(views, state, reason, message, final=False)
                last_written = snapshot

    def _deletion_seen(self) -> bool:
        """Has a pod of the run been deleted since the job was last read (at most 3 reads a second)?"""
        if time.monotonic() - self.last_job_poll < 0.3 or self._job_ended():
            return False
        if any(p["metadata"].get("deletionTimestamp") for p in self.pods.values()):
            return True
        present = {self.replica_pods.replica_of(pod, self.topology) for pod in self.pods.values()}
        return any(key not in present for key in self.seen_pods)

    def _refusal(self) -> tuple[str, str] | None:
        """(reason, message) once the API server has refused to let this follower watch pods or
        read logs for `REFUSED_GIVE_UP_S`; None otherwise."""
        tried = ((self.feed.refused, "watch the run's pods"), (self.streams.refused(), "read the run's pod logs"))
        found = [(*refused, what) for refused, what in tried if refused is not None]
        return refusal(found, self.cluster.host, self.cluster.namespace)

    def _stop_following(self, views, state: RunState, reason: str, message: str) -> int:
        """End, keeping the run's state (the cluster may still be running it), saying why: the
        API server refuses this follower, or has not answered for `give_up_s`."""
        log.warning("run %s: %s", self.run_id, message)
        self.feed.stop()
        self._write_status(views, state, reason, message, final=False, following=False)
        return 0

    def _run_gone(self) -> int:
        """The run directory was deleted: nothing is left to write to, and the run's objects are
        left as they are (deleting a directory is not a request to stop a cluster job)."""
        log.warning("run %s: its directory %s is gone; the follower ends", self.run_id, self.run_dir)
        return 0

    def _finish(self, views, state: RunState, reason: str | None, message: str | None) -> int:
        """Read every replica's log to its end, write the final status, and delete what still runs
        (native: the run's objects; a Kubeflow job that keeps running pods: those pods): its pods
        would otherwise hold their nodes (a ps never exits), and its logs are in the store now."""
        deadline = time.monotonic() + LOG_DRAIN_S
        native = self.handle.backend == "native"
        self.stopping = True  # pods that disappear from now on were deleted by us (or by stop)
        self._drain_events(0.2)
        while not self.listed and time.monotonic() < deadline - LOG_DRAIN_S / 2:
            self._drain_events(0.2)  # a follower started just now: the pods to read are not listed yet
        views = self._views()
        stopped = state == RunState.STOPPED
        if native or stopped or keeps_running_pods(self.handle.job_kind, self.job):
            # still running, or failed past max_restarts (the kubelet would start it again): their
            # logs so far first (a deleted pod's log goes with it), a bounded few at a time
            doomed = {
                key
                for key, (pod, view) in views.items()
                if view.state.value not in ("Succeeded", "Failed")
                or (pod["spec"].get("restartPolicy") not in (None, "Never") and not _main_ended(pod))
            }
            self.streams.snapshot(views, max(0.0, deadline - time.monotonic()), doomed)
            if stopped:  # a stop: this follower deletes the run, once it has its logs (backend.stop)
                self._delete_run()
            else:
                delete_objects(self.cluster, [views[key][0] for key in doomed])
        while time.monotonic() < deadline:  # every replica's log to its end, a bounded few at a time
            if self.leave.is_set():
                return self._leave()
            self._drain_events(0.2)
            views = self._views()
            self.streams.update(views, final=True)
            if not self.streams.pending() and self.streams.all_read(views):
                break
        self.streams.join(max(0.0, deadline - time.monotonic()))
        self.feed.stop()
        self._write_status(views, state, reason, message, final=True)
        if native and not stopped:
            self._delete_run()
        log.info("run %s finished: %s", self.run_id, state.value)
        return 0

    def _delete_run(self) -> None:
        try:
            delete_run(self.cluster, self.handle)
        except (BackendError, HTTPError, OSError) as error:
            log.warning("deleting run %s: %s", self.run_id, error)
