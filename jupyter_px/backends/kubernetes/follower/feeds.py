"""Where a follower's pod events come from: a watch of its own, or its share of a namespace's.

A run's own follower process (no Jupyter server around) watches its run's pods itself
(`OwnWatch`: one list+watch on the run's label). A Jupyter server that follows many runs holds
one watch per namespace and gives each of its followers the events of its run's pods
(`namespace_watch.Subscription`). The follower reads either the same way (`Feed`): events on a
queue, whether the API server answers (`contact`), whether it refuses the watch (`refused`).
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Protocol

from kubernetes.client.exceptions import ApiException

from ..shared.client import Cluster
from ..shared.contact import Contact
from ..shared.names import run_selector
from .pod_watch import PodWatch


class Feed(Protocol):
    """A follower's pod events: ("SNAPSHOT", pods) then (ADDED|MODIFIED|DELETED, pod) on `events`."""

    events: queue.Queue[tuple[str, Any]]
    contact: Contact

    @property
    def refused(self) -> tuple[ApiException, float] | None:
        """A list or watch refused (401/403), and since when; None while allowed."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


class OwnWatch:
    """The run's pods, watched by the follower itself (a thread of its own)."""

    def __init__(self, cluster: Cluster, base: str, what: str):
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.contact = Contact()
        self._done = threading.Event()
        self._watch = PodWatch(cluster, run_selector(base), self.contact, self.events, self._done, what)

    @property
    def refused(self) -> tuple[ApiException, float] | None:
        return self._watch.refused

    def start(self) -> None:
        threading.Thread(target=self._watch.run, name="px-k8s-watch", daemon=True).start()

    def stop(self) -> None:
        self._done.set()
