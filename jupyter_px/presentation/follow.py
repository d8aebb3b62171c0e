"""Following a run as text: its status, and its replicas' logs as they grow.

`jupyter px logs [--follow]`, `jupyter px run --wait` and `%px_logs [--follow]` all print logs
through `LogPrinter`, which reads each log in bounded chunks (`RunStore.iter_log`), so memory
does not grow with a log's size: a 200 MB log, or a single 300 MB line, goes through a buffer of
about `chunk_size` bytes (a line longer than `max_line` is written out in pieces).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from ..runstore import RunStatus
from ..runstore.layout import FAILURE_LOG_PREFIX, METRICS_LOG_PREFIX, PARAMS_LOG_PREFIX, ROUND_LOG_PREFIX
from .labels import ReplicaNames

#: What `follow_run` reads a run's state with: (status, owner problem or None).
StatusReader = Callable[[], tuple[RunStatus, str | None]]

#: Bytes of a log read per step.
LOG_CHUNK_BYTES = 1 << 20
#: With prefixes, a line is held until it ends, up to this many characters; then written in pieces.
MAX_LINE_CHARS = 1 << 20
#: How often a follower looks for new log text and status changes.
POLL_S = 0.1


#: Lines the tracking and the runner write into a pod's log for the follower (metrics and params,
#: parsed into the store's metrics; the failure record, kept as the replica's, whose traceback the
#: log shows already; a torchrun group's start, which the run's attempts show): kept in the stored
#: log, never shown to whoever reads it.
TRACKING_LINES = (METRICS_LOG_PREFIX, PARAMS_LOG_PREFIX, FAILURE_LOG_PREFIX, ROUND_LOG_PREFIX)


def _tracking(line: str) -> bool:
    return line.startswith(TRACKING_LINES)


def _maybe_tracking(start: str) -> bool:
    """Could a line that starts with `start` (not ended yet) be a tracking line?"""
    return any(p.startswith(start) or start.startswith(p) for p in TRACKING_LINES)


class LogPrinter:
    """Writes replicas' new log text to `out`: verbatim for one replica, else line by line, each
    line tagged `[role.index] ` with the role as the job calls it (`names`: a TensorFlow master is
    `[chief.0]`); lines of different replicas never interleave mid-line. The tracking's
    `@px-metrics` / `@px-params` / `@px-failure` / `@px-round` lines are left out (`TRACKING_LINES`)."""

    def __init__(
        self,
        runs: Any,
        run_id: str,
        replicas: Iterable[tuple[str, int]],
        out: TextIO,
        prefixed: bool = True,
        chunk_size: int = LOG_CHUNK_BYTES,
        max_line: int = MAX_LINE_CHARS,
        before_write: Callable[[], None] | None = None,
        names: ReplicaNames | None = None,
    ):
        self.runs, self.run_id, self.out = runs, run_id, out  # the run service
        self.names = names or ReplicaNames()
        self.before_write = before_write  # e.g. clear a progress line drawn on the same terminal
        self._writing = False
        self.prefixed, self.chunk_size, self.max_line = prefixed, chunk_size, max_line
        self.offsets = dict.fromkeys(replicas, 0)
        self.partial = dict.fromkeys(self.offsets, "")
        self.line_open = dict.fromkeys(self.offsets, False)  # unprefixed: the last text did not end a line

    def start_at(self, replica: tuple[str, int], offset: int) -> None:
        """Begin `replica` at byte `offset` (e.g. the last N bytes of its log)."""
        self.offsets[replica] = offset

    def pump(self, final: bool = False) -> bool:
        """Write what the logs gained since the last call; `final` also ends unfinished lines.
        True if anything was written."""
        wrote = self._writing = False
        for key in self.offsets:
            for text, offset in self.runs.iter_log(self.run_id, key[0], key[1], self.offsets[key], self.chunk_size):
                self.offsets[key] = offset
                wrote = self._feed(key, text) or wrote
            if final:
                wrote = self._end(key) or wrote
        if wrote:
            self.out.flush()
        return wrote

    def _feed(self, key: tuple[str, int], text: str) -> bool:
        if not text:
            return False
        self._announce()
        if not self.prefixed:
            return self._verbatim(key, text)
        lines = (self.partial[key] + text).split("\n")
        rest = lines.pop()
        for line in lines:
            if not _tracking(line):
                self._line(key, line)
        while len(rest) >= self.max_line:  # a line with no end in sight: out in pieces
            self._line(key, rest[: self.max_line])
            rest = rest[self.max_line :]
        self.partial[key] = rest
        return True

    def _verbatim(self, key: tuple[str, int], text: str) -> bool:
        """Unprefixed: the text as it came (a line shown before its end, e.g. progress), less
        tracking lines; a line start that could be one waits for its end. Linear in the text: a
        1 MiB chunk of short lines is scanned once, never copied line by line."""
        pending, self.partial[key] = self.partial[key] + text, ""
        if "@" not in pending:  # no tracking line, nor the start of one (the common case)
            self.out.write(pending)
            self.line_open[key] = not pending.endswith("\n")
            return True
        out, start = [], 0
        while start < len(pending):
            end = pending.find("\n", start)
            if end < 0:
                rest = pending[start:]
                if not self.line_open[key] and _maybe_tracking(rest):
                    self.partial[key] = rest
                else:
                    out.append(rest)
                    self.line_open[key] = True
                break
            if self.line_open[key] or not pending.startswith(TRACKING_LINES, start):
                out.append(pending[start : end + 1])
            self.line_open[key] = False
            start = end + 1
        if out:
            self.out.write("".join(out))
        return bool(out)

    def _announce(self) -> None:
        if not self._writing and self.before_write is not None:
            self.before_write()
        self._writing = True

    def _end(self, key: tuple[str, int]) -> bool:
        if self.partial[key] and _tracking(self.partial[key]):
            self.partial[key] = ""
        if not self.prefixed and self.partial[key]:  # held back, and no tracking line after all
            self.line_open[key] = True
            self.out.write(self.partial[key])
            self.partial[key] = ""
        if (self.prefixed and self.partial[key]) or (not self.prefixed and self.line_open[key]):
            self._announce()
        if self.prefixed and self.partial[key]:
            self._line(key, self.partial[key])
            self.partial[key] = ""
            return True
        if not self.prefixed and self.line_open[key]:
            self.out.write("\n")
            self.line_open[key] = False
            return True
        return False

    def _line(self, key: tuple[str, int], line: str) -> None:
        self.out.write(f"{self.names.prefix(*key)}{line}\n")


def follow_run(
    read_status: StatusReader,
    printer: LogPrinter,
    follow: bool = True,
    poll: float = POLL_S,
    on_status: Callable[[RunStatus, bool], None] | None = None,
) -> tuple[RunStatus, str | None]:
    """Print the logs (until the run has finished, with `follow`) and return the last status
    and owner problem. `read_status` is a read (`RunService.observe`: following then ends when
    the run has no owner left to finish it, and the problem says so) or a keeper's
    (`RunService.keep`, which never reports one).

    The status is read before the logs, so the last pass prints everything written before the
    run finished. `on_status(status, wrote)` is called after every pass (a progress line)."""
    while True:
        status, problem = read_status()
        finished = status.state.finished or not follow or problem is not None
        wrote = printer.pump(final=finished)
        if on_status is not None:
            on_status(status, wrote)
        if finished:
            return status, problem
        time.sleep(poll)
