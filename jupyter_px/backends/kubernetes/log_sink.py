"""The follower's log sink: each replica's log stream into the run store, resumable.

A follower may be killed at any moment and started again (`KubernetesBackend.follow`). Per replica
it records which container it was reading and how many lines of it are stored, so the next
follower reads each log from the start and skips what is already there: no line is lost or
doubled. The `@px-metrics` lines of the stored log are parsed into the store's metrics and
TensorBoard event files from a recorded offset, for the same reason.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from ...runstore import atomic_write_json
from ...runstore.layout import RunPaths
from ...runstore.log_metrics import ingest_log_lines
from .client import CONNECT_TIMEOUT_S, Cluster
from .tensorboard_events import EventsWriter

log = logging.getLogger(__name__)

#: A log stream silent this long is opened again (resuming where it was): long, since a replica
#: may print nothing for a while, but bounded, since a silent connection may be a dead one.
LOG_READ_TIMEOUT_S = 3600.0


class RunGone(Exception):
    """The run's directory was deleted: the follower must not write (and so recreate) it."""


class ReplicaLog:
    """One replica's log in the store, its resume point and its metrics offset.

    The resume record (`follower/<replica>.json`) is written when a container's stream starts
    and after every batch: the container, the lines of its log stored, the log file's size then,
    and how far metrics were parsed (log offset, metrics file size). A follower killed between a
    write and its record finds the difference on disk: log lines after the recorded size are
    counted as stored, a metrics file longer than recorded is cut back and parsed again, so
    neither a line nor a point is lost or doubled.
    """

    def __init__(self, paths: RunPaths, role: str, index: int, state_dir: Path):
        self.paths, self.role, self.index = paths, role, index
        self.log_path = paths.log(role, index)
        self.metrics_path = paths.metrics(role, index)
        self.state_path = state_dir / f"{role}-{index}.json"
        self.lock = threading.Lock()
        self.events: EventsWriter | None = None
        try:
            saved = json.loads(self.state_path.read_text())
        except (OSError, ValueError):
            saved = {}
        self.stream = saved.get("stream")
        self.lines = int(saved.get("lines", 0))
        self.metrics_offset = int(saved.get("metrics_offset", 0))
        self.metrics_size = int(saved.get("metrics_size", 0))
        size = _size(self.log_path)
        recorded = int(saved.get("log_size", 0))
        if self.stream is not None and size > recorded:  # stored after the last record: already read
            with open(self.log_path, "rb") as f:
                f.seek(recorded)
                self.lines += f.read().count(b"\n")
        if _size(self.metrics_path) > self.metrics_size:  # parsed after the last record: parse again
            with open(self.metrics_path, "r+b") as f:
                f.truncate(self.metrics_size)

    def _require_run(self) -> None:
        if not self.paths.record.exists():
            raise RunGone(self.paths.run_id)

    def _save(self) -> None:
        self._require_run()  # the store's atomic write creates missing parents: not for a deleted run
        atomic_write_json(
            self.state_path,
            {
                "stream": self.stream,
                "lines": self.lines,
                "log_size": _size(self.log_path),
                "metrics_offset": self.metrics_offset,
                "metrics_size": self.metrics_size,
            },
        )

    def lines_to_skip(self, stream: str) -> int:
        """Lines of this container's log already stored (0 for a new container)."""
        with self.lock:
            if stream != self.stream:
                self.stream, self.lines = stream, 0
                self._save()
            return self.lines

    def append(self, lines: list[bytes]) -> None:
        with self.lock:
            self._require_run()
            self.log_path.parent.mkdir(exist_ok=True)
            with open(self.log_path, "ab") as f:
                f.write(b"".join(lines))
            self.lines += len(lines)
            self._save()
            self._ingest_metrics()

    def _ingest_metrics(self) -> None:
        with open(self.log_path, "rb") as f:
            f.seek(self.metrics_offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        if not end:
            return
        found = ingest_log_lines(self.paths, self.role, self.index, data[:end].split(b"\n"))
        self.metrics_offset += end
        self.metrics_size = _size(self.metrics_path)
        self._save()
        if found.metrics:
            if self.events is None:
                self.events = EventsWriter(self.paths.tensorboard(self.role, self.index))
            self.events.write(found.metrics)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def stream_pod_log(cluster: Cluster, pod: dict[str, Any], restarts: int, replica_log: ReplicaLog) -> None:
    """Follow the log of `pod`'s container (attempt `restarts`) into `replica_log`, skipping the
    lines it already has; until the stream ends (the container exits, the connection drops, the
    run directory is deleted). Run in a thread of its own per replica."""
    name = pod["metadata"]["name"]
    container = pod["spec"]["containers"][0]["name"]
    try:
        skip = replica_log.lines_to_skip(f"{pod['metadata'].get('uid')}/{restarts}")
    except RunGone:
        return
    try:
        response: Any = cluster.core.read_namespaced_pod_log(
            name,
            cluster.namespace,
            container=container,
            follow=True,
            _preload_content=False,
            _request_timeout=(CONNECT_TIMEOUT_S, LOG_READ_TIMEOUT_S),
        )
    except (ApiException, HTTPError, OSError) as error:
        log.info("log of %s not available yet: %s", name, error)
        return
    pending = b""
    try:
        for chunk in response.stream(64 * 1024):
            pending += chunk
            cut = pending.rfind(b"\n") + 1
            if not cut:
                continue
            lines = pending[:cut].splitlines(keepends=True)
            pending = pending[cut:]
            if skip:
                dropped = min(skip, len(lines))
                lines, skip = lines[dropped:], skip - dropped
            if lines:
                replica_log.append(lines)
        if pending and not skip:
            replica_log.append([pending + b"\n"])
    except (HTTPError, OSError) as error:
        log.info("log stream of %s ended: %s", name, error)
    except RunGone:
        log.info("log stream of %s ended: the run directory is gone", name)
    finally:
        response.release_conn()
