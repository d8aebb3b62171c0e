"""One list+watch of every run's pods in a namespace, feeding each run a Jupyter server follows.

A follower of its own watches its run's pods (one watch per run). A Jupyter server following
many runs holds, as kubespawner's `ResourceReflector` (kubespawner 7.1 `kubespawner/reflector.py`:
one list+watch per namespace keeping a local copy every spawner reads) does, one watch per
namespace over every pod that carries the run label (`px.jupyter.org/run`, an existence
selector), and keeps a slim copy of them (`pods.slim`) grouped by run. Each followed run
subscribes with its base name and gets, on a queue of its own, exactly what its own watch would
have given it: a SNAPSHOT of its pods (at once if the namespace was listed already, else with the
first list), then the ADDED / MODIFIED / DELETED events of its pods, in order (the copy and the
queues change under one lock). A new list (the watch's version expired, the connection failed)
is a SNAPSHOT for every subscriber, so a pod deleted meanwhile is noticed by its run.

The watch itself is `PodWatch` (paginated list, bookmarks, reopened from the last version), its
contact shared by the namespace's followers: one API server, one answer.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

from kubernetes.client.exceptions import ApiException

from ..shared.client import Cluster
from ..shared.contact import Contact
from ..shared.names import LABEL_RUN
from .pod_watch import PodWatch
from .pods import slim


class NamespaceWatch:
    """The pods of every run in `cluster`'s namespace, for the subscribers (see the module doc).
    Started at once (a thread); `close` ends it."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.contact = Contact()
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._pods: dict[str, dict[str, dict[str, Any]]] = {}  # run base -> pod name -> slim pod
        self._queues: dict[str, queue.Queue[tuple[str, Any]]] = {}
        self._listed = False
        self._watch = PodWatch(cluster, LABEL_RUN, self.contact, self, self._done, f"namespace {cluster.namespace}")
        threading.Thread(target=self._watch.run, name=f"px-k8s-watch-{cluster.namespace}", daemon=True).start()

    @property
    def refused(self) -> tuple[ApiException, float] | None:
        return self._watch.refused

    def subscription(self, base: str) -> Subscription:
        return Subscription(self, base)

    def _subscribe(self, base: str, events: queue.Queue[tuple[str, Any]]) -> None:
        with self._lock:
            self._queues[base] = events
            if self._listed:
                events.put(("SNAPSHOT", list(self._pods.get(base, {}).values())))

    def _unsubscribe(self, base: str, events: queue.Queue[tuple[str, Any]]) -> None:
        with self._lock:
            if self._queues.get(base) is events:
                del self._queues[base]

    def put(self, item: tuple[str, Any]) -> None:
        """An event of the watch (its thread): into the copy, and to the run it is about."""
        kind, obj = item
        with self._lock:
            if kind == "SNAPSHOT":
                pods: dict[str, dict[str, dict[str, Any]]] = {}
                for pod in obj:
                    pods.setdefault(_run_of(pod), {})[pod["metadata"]["name"]] = slim(pod)
                self._pods, self._listed = pods, True
                for base, events in self._queues.items():
                    events.put(("SNAPSHOT", list(pods.get(base, {}).values())))
                return
            base, name = _run_of(obj), obj["metadata"]["name"]
            if kind == "DELETED":
                self._pods.get(base, {}).pop(name, None)
            else:
                self._pods.setdefault(base, {})[name] = slim(obj)
            subscriber = self._queues.get(base)
            if subscriber is not None:
                subscriber.put((kind, obj))

    def close(self) -> None:
        """End the watch (its thread leaves at its next event or the watch's timeout)."""
        self._done.set()
        self.cluster.close()


class Subscription:
    """One run's share of a namespace watch: the `Feed` a hosted follower reads."""

    def __init__(self, watch: NamespaceWatch, base: str):
        self.watch, self.base = watch, base
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.contact = watch.contact

    @property
    def refused(self) -> tuple[ApiException, float] | None:
        return self.watch.refused

    def start(self) -> None:
        self.watch._subscribe(self.base, self.events)

    def stop(self) -> None:
        self.watch._unsubscribe(self.base, self.events)


def _run_of(pod: dict[str, Any]) -> str:
    return ((pod.get("metadata") or {}).get("labels") or {}).get(LABEL_RUN, "")
