"""Readers of replicas' logs for a live view that polls: bounded work whatever a log's size.

Beside `MetricsReader` for the same reason: a view refreshes every second or so, so each poll
costs a stat per log and reads only what a log grew by (and never more than the view keeps).
They return text; how it is shown (HTML, the "last output" column) is the caller's business.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["LAST_LINE_BYTES", "LOG_TAIL_BYTES", "LogEnds", "LogTail"]

#: Bytes of a replica's log a `LogTail` keeps.
LOG_TAIL_BYTES = 64 * 1024
#: Bytes `LogEnds` reads from the end of a log: enough for its last line of output.
LAST_LINE_BYTES = 2048


class LogTail:
    """The last `limit` bytes of one replica's log, advanced from the last offset it read.

    `store` is a `RunStore` (its `read_log` decodes whole characters across reads)."""

    def __init__(self, store: Any, run_id: str, role: str, index: int, limit: int = LOG_TAIL_BYTES):
        self.store, self.run_id, self.role, self.index, self.limit = store, run_id, role, index, limit
        self.path = store.paths(run_id).log(role, index)
        self.offset: int | None = None
        self.text = ""

    def poll(self) -> bool:
        """Read what was appended; True if the text changed."""
        try:
            size = os.lstat(self.path).st_size
        except FileNotFoundError:
            return False
        if self.offset is not None and self.offset <= size and size - self.offset <= self.limit:
            start = self.offset
        else:  # first read, truncated file, or more new bytes than we keep: start at the tail
            start, self.text = max(0, size - self.limit), ""
        if start == size and self.offset is not None:
            return False
        new, self.offset = self.store.read_log(self.run_id, self.role, self.index, offset=start, limit=size - start)
        text = self.text + new
        if len(text) > self.limit:
            text = text[-self.limit :]
            cut = text.find("\n")
            text = text[cut + 1 :] if 0 <= cut < 4096 else text
        changed = text != self.text or self.offset == size and start == 0 and not text
        self.text = text
        return changed


class LogEnds:
    """The last `limit` bytes of each replica's log, read again only from logs that grew (one
    stat per replica per poll)."""

    def __init__(self, store: Any, run_id: str, replicas: list[tuple[str, int]], limit: int = LAST_LINE_BYTES):
        self.store, self.run_id, self.limit = store, run_id, limit
        self.paths = {
            f"{role}-{index}": (role, index, store.paths(run_id).log(role, index)) for role, index in replicas
        }
        self.sizes: dict[str, int] = {}

    def poll(self) -> dict[str, str]:
        """replica key -> the end of its log, for the logs that changed since the last poll."""
        changed = {}
        for key, (role, index, path) in self.paths.items():
            try:
                size = os.lstat(path).st_size
            except FileNotFoundError:
                continue
            if self.sizes.get(key) == size:
                continue
            self.sizes[key] = size
            changed[key], _ = self.store.read_log(
                self.run_id, role, index, offset=max(0, size - self.limit), limit=self.limit
            )
        return changed
