"""Which replicas' logs the follower reads, and when: a bounded number of threads and
connections whatever the run's size, and no replica's log lost.

- A small run (up to `STREAM_ALL_UP_TO` replicas) streams every replica's log as it comes.
- A big one streams live only the replicas someone looks at: the leader (master, chief, or
  worker 0 without one), replicas that failed or restarted, and those a reader asked for
  (`follower/live.json`, a list of `role-index`, written by the monitor or sidebar); at most
  `MAX_LIVE` at once. Every other replica's log is collected once its container has ended, at
  most `MAX_COLLECT` at a time, before the follower finishes: the log outlives the pod.
- A pod being deleted while it runs (a stop, the operator's cleanPodPolicy, kubectl) keeps its
  log only until its container has exited and the pod is removed: at its `deletionTimestamp`,
  what it has logged since the last stored line is read at once (`MAX_URGENT` at a time, before
  any other read), then followed to its end when a collection is free. The follower's own stop
  reads it before deleting (`snapshot`). Each read that ends wakes the follower's loop (`wake`),
  which starts the next due one at once: an operator's cleanup deletes a big run's pods together,
  and a read left for the loop's next tick (up to a second later) found a pod with a short grace
  period gone, and its log with it (CI: worker-6 of 20, the 17th deleted in name order).
- A refused log request (403, 400, 404) backs off (1 s doubling to `BACKOFF_MAX_S`) instead of
  being asked again every tick; a persistent 401/403 is reported to the follower, which ends the
  follow with that reason.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from ....runstore import ReplicaState, ReplicaStatus
from ..shared.client import Cluster
from ..shared.pod_state import container_started, main_container_name
from .log_sink import ReplicaLog, stream_pod_log

log = logging.getLogger(__name__)

Replica = tuple[str, int]

STREAM_ALL_UP_TO = 16
MAX_LIVE = 16
MAX_COLLECT = 8
#: Reads of pods being deleted at once (each returns at once: what the pod logged so far).
MAX_URGENT = 8
BACKOFF_MAX_S = 60.0
#: A stream that ended without the container having ended is opened again after this.
REOPEN_S = 1.0
LIVE_FILE = "live.json"


@dataclass
class _Slot:
    thread: threading.Thread | None = None
    live: bool = False
    stream: str | None = None  # the container instance the thread reads
    done: str | None = None  # the instance read to its end
    next_try: float = 0.0
    failures: int = 0
    refused: ApiException | None = None  # the last refusal, while requests are refused
    refused_since: float | None = None
    urgent: bool = False  # the thread reads a pod being deleted, without following
    saved: str | None = None  # the instance whose log so far was read when its pod was being deleted
    opened: threading.Event = field(default_factory=threading.Event)  # the thread's current read is streaming


class LogStreams:
    """The follower's log threads (see the module doc). `update` is called from the follower's
    loop with the replicas' current pods; threads report back into their slot."""

    def __init__(
        self,
        cluster: Cluster,
        logs: dict[Replica, ReplicaLog],
        leaders: set[Replica],
        state_dir: Path,
        wake: Callable[[], None] = lambda: None,
    ):
        self.cluster, self.logs, self.leaders, self.state_dir = cluster, logs, leaders, state_dir
        self.wake = wake
        self.slots = {key: _Slot() for key in logs}
        self.lock = threading.Lock()
        self.stream_all = len(logs) <= STREAM_ALL_UP_TO

    def _wanted(self) -> set[Replica]:
        try:
            names = json.loads((self.state_dir / LIVE_FILE).read_text())
        except (OSError, ValueError):
            return set()
        out = set()
        for name in names if isinstance(names, list) else []:
            role, _, index = str(name).rpartition("-")
            if index.isdigit():
                out.add((role, int(index)))
        return out

    def _live(self, key: Replica, view: ReplicaStatus, wanted: set[Replica]) -> bool:
        return (
            self.stream_all
            or key in self.leaders
            or key in wanted
            or view.restarts > 0
            or view.state in (ReplicaState.FAILED, ReplicaState.RESTARTING)
        )

    def active(self) -> tuple[int, int, int]:
        """(live streams, collections, reads of pods being deleted) running now."""
        with self.lock:
            running = [s for s in self.slots.values() if s.thread is not None and s.thread.is_alive()]
            return (
                sum(1 for s in running if s.live),
                sum(1 for s in running if not s.live and not s.urgent),
                sum(1 for s in running if s.urgent),
            )

    def update(self, views: dict[Replica, tuple[dict[str, Any], ReplicaStatus]], final: bool = False) -> None:
        """Start the reads that are due (`final`: every replica's log, the run has ended).

        A pod being deleted (a `deletionTimestamp`: our stop, the operator's cleanPodPolicy, a
        kubectl delete) keeps its log only until its container has exited and the pod is removed:
        what it logged so far is read at once (a read that does not follow, from the last stored
        line, `MAX_URGENT` at a time, before anything else), then followed to its end like an
        ended replica's when a collection is free."""
        now = time.monotonic()
        wanted = self._wanted() if not self.stream_all else set()
        live_running, collecting, urgent = self.active()
        todo: list[tuple[int, Replica, dict[str, Any], ReplicaStatus, str, bool]] = []
        for key, (pod, view) in views.items():
            slot = self.slots.get(key)
            if slot is None or (slot.thread is not None and slot.thread.is_alive()):
                continue
            deleting = bool(pod["metadata"].get("deletionTimestamp"))
            if not container_started(pod) or (now < slot.next_try and not deleting):
                continue  # a pod being deleted is read now: its log goes with it
            stream = f"{pod['metadata'].get('uid')}/{view.restarts}"
            if slot.done == stream:
                continue
            ended = view.state in (ReplicaState.SUCCEEDED, ReplicaState.FAILED)
            live = self._live(key, view, wanted)
            if deleting and slot.saved != stream:
                todo.append((0, key, pod, view, "now", ended))
                continue
            if not (live or ended or final or deleting):
                continue  # collected when it ends
            todo.append((1 if live else 2, key, pod, view, "live" if live and not ended else "collect", ended))
        for _, key, pod, view, mode, ended in sorted(todo, key=lambda t: t[0]):
            if mode == "now" and urgent >= MAX_URGENT:
                continue
            if mode == "live" and live_running >= MAX_LIVE:
                continue
            if mode == "collect" and collecting >= MAX_COLLECT:
                continue
            self._start(key, pod, view, mode, ended)
            if mode == "now":
                urgent += 1
            elif mode == "live":
                live_running += 1
            else:
                collecting += 1

    def _start(self, key: Replica, pod: dict[str, Any], view: ReplicaStatus, mode: str, ended: bool) -> None:
        slot = self.slots[key]
        slot.live, slot.urgent = mode == "live", mode == "now"
        slot.opened = threading.Event()
        slot.stream = f"{pod['metadata'].get('uid')}/{view.restarts}"
        container = main_container_name(pod) or "replica"
        read: Any = self._read_now if mode == "now" else self._read

        def read_then_wake(*args: Any) -> None:
            try:
                read(*args)
            finally:
                self.wake()  # its place is free: the loop starts the next read due now

        slot.thread = threading.Thread(
            target=read_then_wake,
            args=(slot, pod, container, view.restarts, ended, self.logs[key]),
            name=f"px-k8s-log-{key[0]}-{key[1]}",
            daemon=True,
        )
        slot.thread.start()

    def _read_now(
        self, slot: _Slot, pod: dict[str, Any], container: str, restarts: int, ended: bool, replica_log: ReplicaLog
    ) -> None:
        """A pod being deleted: the rest of its previous container instance if that was not read
        whole (a crash's last lines), then what the current one has logged so far. Both return at
        once (no follow: a pod removed while others wait for a slot takes its log with it); the
        current one is then followed to its end when a collection is free."""
        from .log_sink import RunGone, read_instance

        stream = slot.stream or ""
        uid = pod["metadata"].get("uid")
        try:
            if restarts > 0 and replica_log.stream != stream:
                earlier = f"{uid}/{restarts - 1}"
                try:
                    if read_instance(self.cluster, pod, container, earlier, replica_log, previous=True, follow=False):
                        replica_log.mark_complete(earlier)
                except ApiException as error:
                    log.info("previous log of %s, being deleted: %s", pod["metadata"]["name"], error)
            if read_instance(self.cluster, pod, container, stream, replica_log, previous=False, follow=False) and ended:
                replica_log.mark_complete(stream)
        except RunGone:
            return
        except (ApiException, HTTPError, OSError) as error:  # gone already, or not started: as collected
            log.info("log of %s, being deleted: %s", pod["metadata"]["name"], error)
        with self.lock:
            slot.saved = stream

    def _read(
        self, slot: _Slot, pod: dict[str, Any], container: str, restarts: int, ended: bool, replica_log: ReplicaLog
    ) -> None:
        name = pod["metadata"]["name"]
        try:
            complete = stream_pod_log(self.cluster, pod, container, restarts, ended, replica_log, slot.opened)
        except ApiException as error:
            with self.lock:
                slot.failures += 1
                # 400: the kubelet has no such container instance (yet): waiting to (re)start, or
                # its pod already going. Asked again soon, not backed off: its pod may be deleted
                # before a long back-off ends, and its log with it.
                backoff = REOPEN_S if error.status == 400 else min(BACKOFF_MAX_S, 2.0 ** (slot.failures - 1))
                slot.next_try = time.monotonic() + backoff
                if error.status in (401, 403):
                    slot.refused = error
                    slot.refused_since = slot.refused_since or time.monotonic()
            log.info("log of %s refused (%s); again in %.0f s", name, error.status, backoff)
            return
        except (HTTPError, OSError) as error:
            log.info("log of %s not reachable: %s", name, error)
            complete = False
        with self.lock:
            slot.failures, slot.refused, slot.refused_since = 0, None, None
            if complete:
                slot.done = slot.stream
            else:
                slot.next_try = time.monotonic() + REOPEN_S

    def refused(self) -> tuple[ApiException, float] | None:
        """A 401/403 that every replica's log request got for the longest, and since when; None
        once any log request succeeds."""
        with self.lock:
            started = [s for s in self.slots.values() if s.thread is not None]
            refused = [s for s in started if s.refused is not None and s.refused_since is not None]
            if not refused or len(refused) < len(started):
                return None
            first = min(refused, key=lambda s: s.refused_since or 0.0)
            return first.refused, first.refused_since or 0.0  # type: ignore[return-value]

    def snapshot(
        self, views: dict[Replica, tuple[dict[str, Any], ReplicaStatus]], timeout: float, keys: set[Replica]
    ) -> None:
        """Store what the replicas `keys` have logged so far, before the run deletes their pods:
        those nobody streams now by a read that does not follow, `MAX_COLLECT` at a time; those
        streamed live once their stream is open (the kubelet then streams the instance to its
        end, the kill included). A live read whose request was not served yet would find the pod
        gone, and its log with it (ci68: a follower started late, at the job's end): it is waited
        for, and read here if it ended without opening."""
        from concurrent.futures import ThreadPoolExecutor, wait

        from .log_sink import read_instance

        deadline = time.monotonic() + timeout
        todo, streaming = [], []
        for key, (pod, view) in views.items():
            slot = self.slots.get(key)
            if key not in keys or slot is None or not container_started(pod):
                continue
            item = (pod, f"{pod['metadata'].get('uid')}/{view.restarts}", self.logs[key])
            if slot.thread is not None and slot.thread.is_alive():
                streaming.append((slot, item))
            else:
                todo.append(item)

        def read(pod: dict[str, Any], stream: str, replica_log: ReplicaLog) -> None:
            container = main_container_name(pod) or "replica"
            try:
                read_instance(self.cluster, pod, container, stream, replica_log, previous=False, follow=False)
            except (ApiException, HTTPError, OSError) as error:
                log.info("log of %s before its deletion: %s", pod["metadata"]["name"], error)

        for slot, item in streaming:
            thread = slot.thread
            while thread is not None and thread.is_alive() and not slot.opened.is_set():
                if time.monotonic() >= deadline:
                    break
                slot.opened.wait(0.05)
            if not slot.opened.is_set() and not (thread is not None and thread.is_alive()):
                todo.append(item)  # it ended without streaming (refused, cut): read it here
        if not todo:
            return
        with ThreadPoolExecutor(max_workers=MAX_COLLECT, thread_name_prefix="px-k8s-snapshot") as pool:
            wait([pool.submit(read, *item) for item in todo], timeout=max(0.0, deadline - time.monotonic()))

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for slot in list(self.slots.values()):
            if slot.thread is not None:
                slot.thread.join(max(0.0, deadline - time.monotonic()))

    def all_read(self, views: dict[Replica, tuple[dict[str, Any], ReplicaStatus]]) -> bool:
        """Has every replica's log been read to its end (or refused three times running)?"""
        with self.lock:
            for key, (pod, view) in views.items():
                slot = self.slots.get(key)
                if slot is None or not container_started(pod) or slot.failures >= 3:
                    continue
                if slot.done != f"{pod['metadata'].get('uid')}/{view.restarts}":
                    return False
            return True

    def read_to_end(self, key: Replica) -> bool:
        """Has the replica's newest container's log been read to its end (or refused three times
        running)? What it printed before it exited, its failure record too, is then stored."""
        with self.lock:
            slot = self.slots.get(key)
            return slot is None or slot.failures >= 3 or (slot.stream is not None and slot.done == slot.stream)

    def pending(self) -> bool:
        """Is any read still running?"""
        return any(self.active())
