"""The follower's log sink: each replica's log stream into the run store, resumable by time.

A follower may be killed at any moment and started again, and a log stream may be cut by the
network at any moment; the kubelet meanwhile rotates container logs and serves only the newest
file (pkg/kubelet/logs/container_log_manager.go), so "the first N lines were stored, skip N" is
wrong after a rotation: the newest file does not start where the log started. So every log is
read with `timestamps=true`, and a stream resumes from the last stored line's time
(`sinceTime`, which the server applies inclusively), skipping the lines at that very instant that
are already stored: no line is lost or doubled across reconnects, rotations or follower restarts.

- A line cut by a disconnect is held back, never stored: the next stream re-reads it whole.
- After a container restart, the previous instance (`previous=true`) is read to its end first,
  then the current one: a crash's last lines are what people come for.
- Per replica the follower records which container instance is read (`<pod uid>/<restart
  count>`), the time of its last stored line and how many stored lines share it, whether it was
  read to its end, and how far metrics were parsed (`ReplicaLog`: a journal line committed after
  each batch, so a follower killed in between cuts the batch back and reads it again).

The `@px-metrics` lines of the stored log are parsed into the store's metrics and TensorBoard
event files from a recorded offset, for the same reason.
"""

from __future__ import annotations

import calendar
import json
import logging
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from ....runstore import atomic_write_bytes, atomic_write_json
from ....runstore.layout import RunPaths
from ....runstore.log_metrics import ingest_log_lines
from ..shared.client import Cluster, raw_get
from .tensorboard_events import EventsWriter

log = logging.getLogger(__name__)

#: A log stream silent this long is opened again (resuming where it was): long, since a replica
#: may print nothing for a while, but bounded, since a silent connection may be a dead one.
LOG_READ_TIMEOUT_S = 3600.0

#: The journal is rewritten as its last line alone every this many batches.
JOURNAL_COMPACT_EVERY = 1000

#: A point in a log: (seconds since the epoch, nanoseconds), comparable; parsed from RFC 3339.
Stamp = tuple[int, int]


class RunGone(Exception):
    """The run's directory was deleted (the follower must not write, and so recreate, it), or
    this follower handed the run over: its log sinks are closed."""


def parse_stamp(text: str) -> Stamp | None:
    """`2026-01-02T03:04:05.123456789Z` (any number of fraction digits, as Go's RFC3339Nano
    writes them, trailing zeros cut) as (seconds, nanoseconds); None if it is not one."""
    if len(text) < 20 or text[10] != "T" or not text.endswith("Z"):
        return None
    whole, _, fraction = text[:-1].partition(".")
    try:
        seconds = calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S"))
        nanos = int((fraction + "000000000")[:9]) if fraction else 0
    except ValueError:
        return None
    return seconds, nanos


def since_time(stamp: Stamp) -> str:
    """The `sinceTime` to resume at `stamp`: whole seconds (what every server parses), so the
    answer starts at or before the stamp and the reader skips what it has."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp[0]))


@dataclass
class Position:
    """Where a container instance's log is stored up to."""

    stream: str | None = None  # "<pod uid>/<restart count>"
    last: Stamp | None = None  # the time of the last stored line
    at_last: int = 0  # stored lines with exactly that time
    complete: bool = False  # read to its end (the instance has ended)
    lines: int = 0  # stored lines of this instance (resumes a server that ignores timestamps=true)


class ReplicaLog:
    """One replica's log in the store, its resume position and its metrics offset.

    Two records in `follower/`: `<replica>.json` names the container instance being read and
    whether it was read to its end (rewritten when that changes), and `<replica>.pos`, a journal
    with one line per stored batch, appended after the batch and its metrics are written: the log's
    size, the last line's time and how many stored lines share it, the metrics offset and file
    size. Appending a line is cheap (no rename, no sync), so a fast log is stored as fast as it
    comes (a reader that falls behind the kubelet's rotation loses a whole rotated file). A
    follower killed between a batch and its journal line finds the log (or metrics) longer than
    the journal says: it cuts them back and reads that batch again."""

    def __init__(self, paths: RunPaths, role: str, index: int, state_dir: Path):
        self.paths, self.role, self.index = paths, role, index
        self.log_path = paths.log(role, index)
        self.metrics_path = paths.metrics(role, index)
        self.state_path = state_dir / f"{role}-{index}.json"
        self.journal_path = state_dir / f"{role}-{index}.pos"
        self.lock = threading.Lock()
        self.events: EventsWriter | None = None
        self.closed = False  # this follower writes no more (it handed the run over)
        try:
            saved = json.loads(self.state_path.read_text())
        except (OSError, ValueError):
            saved = {}
        self.position = Position(saved.get("stream"), complete=bool(saved.get("complete")))
        self.metrics_offset = self.metrics_size = 0
        log_size = 0
        entry = _last_entry(self.journal_path)
        if entry is not None and entry[0] == self.position.stream:
            _, log_size, seconds, nanos, self.position.at_last, self.metrics_offset, self.metrics_size = entry[:7]
            self.position.lines = entry[7]
            self.position.last = (seconds, nanos) if seconds >= 0 else None
        elif entry is not None:  # a journal of an earlier instance: where the files end is all it says
            _, log_size, _, _, _, self.metrics_offset, self.metrics_size = entry[:7]
        else:  # no journal: a new replica, or a record of an older version (its offsets)
            log_size = _size(self.log_path)
            self.metrics_offset = int(saved.get("metrics_offset", 0))
            self.metrics_size = int(saved.get("metrics_size", 0))
        if _size(self.log_path) > log_size:  # stored after the last journal line: read again
            with open(self.log_path, "r+b") as f:
                f.truncate(log_size)
        if _size(self.metrics_path) > self.metrics_size:  # parsed after it: parse again
            with open(self.metrics_path, "r+b") as f:
                f.truncate(self.metrics_size)
        self.journal_entries = 0

    @property
    def stream(self) -> str | None:
        return self.position.stream

    def _require_run(self) -> None:
        if self.closed or not self.paths.record.exists():
            raise RunGone(self.paths.run_id)

    def close(self) -> None:
        """Write nothing more (a write under way completes first): the run goes to another
        follower, which resumes from what this one committed."""
        with self.lock:
            self.closed = True

    def _save(self) -> None:
        self._require_run()  # the store's atomic write creates missing parents: not for a deleted run
        atomic_write_json(self.state_path, {"stream": self.position.stream, "complete": self.position.complete})

    def _journal(self) -> None:
        """Commit the position (after the batch and its metrics are on disk)."""
        last = self.position.last or (-1, 0)
        line = (
            f"{self.position.stream} {_size(self.log_path)} {last[0]} {last[1]} {self.position.at_last} "
            f"{self.metrics_offset} {self.metrics_size} {self.position.lines}\n"
        )
        self.journal_entries += 1
        if self.journal_entries >= JOURNAL_COMPACT_EVERY:  # one line is all a restart needs
            atomic_write_bytes(self.journal_path, line.encode())
            self.journal_entries = 0
            return
        with open(self.journal_path, "a") as f:
            f.write(line)

    def position_of(self, stream: str) -> Position:
        """Where `stream` (a container instance) is stored up to: a new instance starts empty."""
        with self.lock:
            if stream != self.position.stream:
                self._require_run()
                self.position = Position(stream)
                self._save()
                self._journal()
            return Position(**vars(self.position))

    def append(self, stream: str, lines: list[tuple[Stamp | None, bytes]]) -> None:
        """Store `lines` (each with its time) of `stream`, then commit where that leaves it."""
        with self.lock:
            self._require_run()
            if stream != self.position.stream:
                return  # a stream that was superseded (a late thread of an older instance)
            self.position.lines += len(lines)
            for stamp, _ in lines:
                if stamp is None:
                    continue
                if stamp == self.position.last:
                    self.position.at_last += 1
                else:
                    self.position.last, self.position.at_last = stamp, 1
            self.log_path.parent.mkdir(exist_ok=True)
            with open(self.log_path, "ab") as f:
                f.write(b"".join(text for _, text in lines))
            self._ingest_metrics()
            self._journal()

    def mark(self, line: str) -> int:
        """Append a line of the run's own (an attempt's boundary) between two container
        instances' lines; the byte the log continues at, committed like a batch."""
        with self.lock:
            self._require_run()
            self.log_path.parent.mkdir(exist_ok=True)
            with open(self.log_path, "ab") as f:
                f.write(line.encode())
                end = f.tell()
            self._journal()
            return end

    def mark_complete(self, stream: str) -> None:
        with self.lock:
            if stream == self.position.stream and not self.position.complete:
                self.position.complete = True
                self._save()

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
        if found.metrics:
            if self.events is None:
                self.events = EventsWriter(self.paths.tensorboard(self.role, self.index))
            self.events.write(found.metrics)


def _last_entry(path: Path) -> tuple[str, int, int, int, int, int, int, int] | None:
    """The journal's last whole line (a line cut by a kill is not one)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    for line in reversed(data.split(b"\n")[:-1]):  # the piece after the last newline is cut
        fields = line.decode(errors="replace").split()
        if len(fields) == 8:
            try:
                stream, numbers = fields[0], [int(f) for f in fields[1:]]
            except ValueError:
                continue
            return (stream, *numbers)  # type: ignore[return-value]
    return None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


class LineReader:
    """Timestamped log bytes (`<RFC 3339 time> <text>\\n`) as whole lines, skipping what a
    position says is stored. A line is only given out once its newline came: a stream cut
    mid-line leaves it in `pending`, never stored (the next stream reads it whole)."""

    def __init__(self, position: Position):
        self.last, self.at_last = position.last, position.at_last
        #: without times (a server that ignores timestamps=true), the lines stored are skipped
        self.skip_untimed = position.lines if position.last is None else 0
        self.seen_at_last = 0
        self.pending = b""

    def feed(self, chunk: bytes) -> list[tuple[Stamp | None, bytes]]:
        self.pending += chunk
        cut = self.pending.rfind(b"\n") + 1
        if not cut:
            return []
        whole, self.pending = self.pending[:cut], self.pending[cut:]
        return [line for raw in whole.splitlines(keepends=True) if (line := self._line(raw)) is not None]

    def finish(self) -> list[tuple[Stamp | None, bytes]]:
        """The stream ended cleanly (the container's log is complete): a last line without a
        newline is a line too."""
        rest, self.pending = self.pending, b""
        line = self._line(rest + b"\n") if rest else None
        return [line] if line is not None else []

    def _line(self, raw: bytes) -> tuple[Stamp | None, bytes] | None:
        head, space, text = raw.partition(b" ")
        stamp = parse_stamp(head.decode("ascii", "replace")) if space else None
        if stamp is None:  # no time (a server that ignores timestamps=true): count them
            if self.skip_untimed > 0:
                self.skip_untimed -= 1
                return None
            return None, raw
        if self.last is not None:
            if stamp < self.last:
                return None
            if stamp == self.last:
                self.seen_at_last += 1
                if self.seen_at_last <= self.at_last:
                    return None
        return stamp, text


def open_log(cluster: Cluster, name: str, container: str, *, follow: bool, previous: bool, since: Stamp | None) -> Any:
    """GET the pod's log with timestamps (and `sinceTime`, which the official client's method
    does not offer: `raw_get` authenticates it as the client does); the raw streaming
    response, or ApiException with the server's status."""
    query: list[tuple[str, Any]] = [("container", container), ("timestamps", "true")]
    if follow:
        query.append(("follow", "true"))
    if previous:
        query.append(("previous", "true"))
    if since is not None:
        query.append(("sinceTime", since_time(since)))
    path = f"/api/v1/namespaces/{quote(cluster.namespace)}/pods/{quote(name)}/log"
    return raw_get(cluster, path, query, "text/plain", LOG_READ_TIMEOUT_S)


def read_instance(
    cluster: Cluster,
    pod: dict[str, Any],
    container: str,
    stream: str,
    replica_log: ReplicaLog,
    *,
    previous: bool,
    follow: bool = True,
    opened: threading.Event | None = None,
) -> bool:
    """Read one container instance's log (`previous`: the one before the current) into the store
    from where it is stored up to; whether it was read to its end. Raises ApiException for a
    refused request (the caller backs off); a cut connection is just False."""
    name = pod["metadata"]["name"]
    position = replica_log.position_of(stream)
    if position.complete:
        return True
    response = open_log(
        cluster, name, container, follow=follow and not previous, previous=previous, since=position.last
    )
    if opened is not None:  # the kubelet streams this instance now: to its end, even if it is killed
        opened.set()
    reader = LineReader(position)
    chunks: queue.SimpleQueue[bytes | BaseException | None] = queue.SimpleQueue()
    receiver = threading.Thread(target=_receive, args=(response, chunks), name=f"px-k8s-recv-{name}", daemon=True)
    receiver.start()
    try:
        while True:
            batch = [chunks.get()]
            while batch[-1] is not None and not isinstance(batch[-1], BaseException):
                try:
                    batch.append(chunks.get_nowait())
                except queue.Empty:
                    break
            end = batch[-1]
            data = b"".join(c for c in batch if isinstance(c, bytes))
            lines = reader.feed(data) if data else []
            if isinstance(end, BaseException):
                if lines:
                    replica_log.append(stream, lines)
                log.info("log stream of %s (%s) was cut: %s", name, stream, end)
                return False
            if end is None:
                lines += reader.finish()
            if lines:
                replica_log.append(stream, lines)
            if end is None:
                return True
    finally:
        response.release_conn()


def _receive(response: Any, chunks: queue.SimpleQueue) -> None:
    """Read the stream as fast as it comes (the writer stores what piled up as one batch: a
    reader slower than the kubelet's rotation would lose whole rotated files); None at a clean
    end, the error at a cut."""
    try:
        for chunk in response.stream(64 * 1024):
            chunks.put(chunk)
        chunks.put(None)
    except (HTTPError, OSError) as error:
        chunks.put(error)


def stream_pod_log(
    cluster: Cluster,
    pod: dict[str, Any],
    container: str,
    restarts: int,
    ended: bool,
    replica_log: ReplicaLog,
    opened: threading.Event | None = None,
) -> bool:
    """Store the log of `pod`'s `container`, attempt `restarts`: first the rest of the previous
    attempt if it was not read to its end, then this one (followed while it runs). `ended`: the
    pod's status said this attempt had ended, so a clean end of its stream is its end. Whether
    the log is complete; ApiException for a refused request (403, 400 ...)."""
    uid = pod["metadata"].get("uid")
    stream = f"{uid}/{restarts}"
    try:
        if restarts > 0 and replica_log.stream != stream:  # the attempt before, unless read whole
            earlier = f"{uid}/{restarts - 1}"
            try:
                if not read_instance(cluster, pod, container, earlier, replica_log, previous=True):
                    return False  # cut: again from where it is
            except ApiException as error:
                if error.status != 400:  # 400: the kubelet keeps no previous instance (any more)
                    raise
            replica_log.mark_complete(earlier)
        finished = read_instance(cluster, pod, container, stream, replica_log, previous=False, opened=opened)
        if finished and ended:
            replica_log.mark_complete(stream)
            return True
        return False
    except RunGone:
        log.info("log stream of %s ended: the run directory is gone", pod["metadata"]["name"])
        return True
