"""Pods as a stream of events (a list, then a watch from its version): one run's for its own
follower, or every run's of a namespace for a Jupyter server's followers (`namespace_watch.py`);
and the reads beside the watch: a run's Kubeflow job (read, not watched: its conditions change a
few times per run) and the Warning events about a run's objects.

List the pods (paginated: a 10,000-pod run is not one huge answer), then watch them from that
list's version with bookmarks, opening the watch again from the last version seen when it times
out (not listing every pod again); list again only when the version expired (410, an ERROR
event) or the connection failed. Each list is a SNAPSHOT event that replaces what the follower
knows, so a pod deleted while the watch was down is noticed, and a failed reconnect changes
nothing. A list or watch refused (401/403) is kept in `refused` (since when), for the follower
to end with that reason if it lasts.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any, Protocol
from urllib.parse import quote

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from ..shared.client import Cluster, Query, raw_get, request
from ..shared.contact import Contact
from ..shared.resources import KINDS, Kind

log = logging.getLogger(__name__)

#: Server-side length of one watch; the client gives up on a silent connection some time after.
#: A watch that times out is opened again from the last version it saw (bookmarks keep it fresh),
#: not by listing every pod again.
WATCH_TIMEOUT_S = 300
#: Pods per page of a list (limit/continue).
LIST_PAGE = 500
READ_TIMEOUT_S = WATCH_TIMEOUT_S + 30.0
#: Back-off between failed list/watch attempts: 0.5 s doubling up to this.
RETRY_MAX_S = 5.0


class EventSink(Protocol):
    """Where a watch puts its events: a follower's queue, or a namespace watch's router."""

    def put(self, item: tuple[str, Any]) -> None: ...


class PodWatch:
    """The pods matching `selector` as ("SNAPSHOT", pods) / (ADDED|MODIFIED|DELETED, pod) events
    on `events`, until `done` is set (run it in a thread)."""

    def __init__(
        self,
        cluster: Cluster,
        selector: str,
        contact: Contact,
        events: EventSink,
        done: threading.Event,
        what: str,
    ):
        self.cluster, self.selector, self.contact = cluster, selector, contact
        self.events, self.done, self.what = events, done, what
        self.refused: tuple[ApiException, float] | None = None  # list/watch refused (401/403), since
        self.pods = KINDS["Pod"].collection(cluster.namespace)

    def _watch(self, version: str | None) -> Iterator[dict[str, Any]]:
        """The watch's events from `version` (`{"type": ..., "object": {...}}`, a JSON line each),
        until the server ends it (`WATCH_TIMEOUT_S`) or the connection fails."""
        query: Query = [("labelSelector", self.selector)]
        if version:
            query.append(("resourceVersion", version))
        query += [("allowWatchBookmarks", "true"), ("timeoutSeconds", WATCH_TIMEOUT_S), ("watch", "true")]
        response = raw_get(self.cluster, self.pods, query, "application/json", READ_TIMEOUT_S)
        try:
            pending = b""
            for chunk in response.stream(64 * 1024):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)
            if pending.strip():
                yield json.loads(pending)
        finally:
            response.release_conn()

    def _list(self) -> tuple[list[dict[str, Any]], str | None]:
        """Every pod of the run, page by page (`limit`/`continue`, one snapshot), and its version."""
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            query: Query = [("labelSelector", self.selector), ("limit", LIST_PAGE)]
            if token:
                query.append(("continue", token))
            data = request(self.cluster, "GET", self.pods, query, read_timeout=READ_TIMEOUT_S)
            self.contact.answered()
            items += data.get("items") or []
            meta = data.get("metadata") or {}
            token = meta.get("continue")
            if not token:
                return items, meta.get("resourceVersion")

    def run(self) -> None:
        """List the run's pods (paginated), then watch them from that list's version with
        bookmarks, opening the watch again from the last version seen when it times out; list
        again only when the version expired (410, an ERROR event) or the connection failed. The
        list replaces what the follower knows (a SNAPSHOT), so a pod deleted while the watch
        was down is noticed, and a failed reconnect changes nothing (no list, no snapshot)."""
        failures = 0
        version: str | None = None
        while not self.done.is_set():
            try:
                if version is None:
                    items, version = self._list()
                    self.refused = None
                    failures = 0
                    self.events.put(("SNAPSHOT", items))
                for event in self._watch(version):
                    self.contact.answered()
                    self.refused = None
                    obj = event.get("object") or {}
                    if event["type"] == "ERROR":  # e.g. 410 Gone: the version expired; list again
                        version = None
                        break
                    version = (obj.get("metadata") or {}).get("resourceVersion") or version
                    if event["type"] != "BOOKMARK":
                        self.events.put((event["type"], obj))
                    if self.done.is_set():
                        break
            except (ApiException, HTTPError, OSError, ValueError, LookupError) as error:
                self.contact.failed(error)
                version = None
                failures += 1
                if isinstance(error, ApiException) and error.status in (401, 403):
                    self.refused = (error, self.refused[1] if self.refused else time.monotonic())
                if failures == 1 or failures % 20 == 0:
                    log.warning("watching pods of %s (attempt %d): %s", self.what, failures, error)
                self.done.wait(min(RETRY_MAX_S, 0.5 * 2 ** min(failures, 8)))


def latest_warning(cluster: Cluster, base: str) -> tuple[str, str] | None:
    """(reason, message) of the latest Warning event about one of a run's objects (the job, its
    pods, a JobSet's Jobs: all named after the run's base), or None (none, or none readable)."""
    try:
        events = f"/api/v1/namespaces/{quote(cluster.namespace, safe='')}/events"
        listed = request(cluster, "GET", events, [("fieldSelector", "type=Warning")], read_timeout=READ_TIMEOUT_S)
        items = listed.get("items") or []
    except (ApiException, HTTPError, OSError, ValueError) as error:
        log.info("reading the events of %s: %s", base, error)
        return None
    ours = [
        e
        for e in items
        if (name := (e.get("involvedObject") or {}).get("name") or "") == base or name.startswith(base + "-")
    ]
    if not ours:
        return None
    latest = max(ours, key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
    return latest.get("reason") or "Warning", latest.get("message") or ""


def read_job(cluster: Cluster, kind: Kind, base: str, contact: Contact) -> dict[str, Any] | None:
    """The run's job as the API server has it; a job that is gone reads as Failed ("Deleted");
    None when the server did not answer (the caller keeps what it read last)."""
    try:
        job = kind.get(cluster, base, read_timeout=READ_TIMEOUT_S)
        contact.answered()
        return job
    except ApiException as error:
        contact.failed(error)  # an answer: contact
        if error.status != 404:
            return None
        deleted = {"type": "Failed", "status": "True", "reason": "Deleted", "message": f"the {kind.kind} was deleted"}
        return {"status": {"conditions": [deleted]}}
    except (HTTPError, OSError) as error:
        contact.failed(error)
        log.warning("reading %s %s: %s", kind.kind, base, error)
        return None
