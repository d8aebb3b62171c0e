"""A client's place in a run's metrics: how far it has read each file, as an opaque string.

A client that polls (the sidebar's metrics panel, over HTTP) must get every point exactly once.
A time cannot say what it has: replicas flush on their own timers, so a worker's point stamped
100.3 can land after the master's 100.4 was read. A position can: per metrics file, the byte
offset up to which the client has the points, and the file's inode (a replaced file is read from
its start). Files the cursor does not name (a replica that started late, a process file that
appeared) are read from their start.

The cursor is `p1.` + unpadded base64url of zlib-compressed compact JSON
`{"<file>": [offset, inode], ...}`, the file relative to the run directory
(`metrics/worker-0.jsonl`); compressed because it travels in a URL, and a run with hundreds of
process files would otherwise near the server's limit on a request line. Clients must not build
or read it: each answer's cursor goes back verbatim; the format may change behind `p1.`.

Work per poll is bounded: at most about `budget` bytes are read, shared among the files with
something new, and `MetricsPage.more` says that points are still waiting (poll again).
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from .metrics import FilePosition, MetricsReader, Update
from .series import Series

__all__ = ["CURSOR_VERSION", "MetricsCursorError", "MetricsPage", "decode_cursor", "encode_cursor", "read_page"]

#: The prefix of every cursor: the format's version.
CURSOR_VERSION = "p1."
#: A longer cursor is refused unread (no request line that long reaches the server anyway).
MAX_CURSOR_CHARS = 64 * 1024
#: A cursor that inflates to more than this is refused (a zlib bomb costs nothing to send).
MAX_CURSOR_JSON = 16 << 20
#: Bytes of metrics files one page reads, at most (plus the rest of a line or record).
PAGE_BUDGET = 8 << 20
#: The least a file with something new gets of the budget: with more files than the budget
#: gives this much, the page reads the first files only.
MIN_FILE_SHARE = 64 << 10

Positions = dict[str, FilePosition]


class MetricsCursorError(ValueError):
    """A cursor this module did not make; the message names it."""

    def __init__(self, text: str, reason: str):
        shown = text if len(text) <= 120 else text[:117] + "..."
        super().__init__(f"{shown!r} is not a metrics cursor ({reason}); pass back the `cursor` of an earlier answer")
        self.text = text


def encode_cursor(positions: Mapping[str, FilePosition]) -> str:
    payload = json.dumps(
        {name: [position.offset, position.inode] for name, position in sorted(positions.items())},
        separators=(",", ":"),
    )
    packed = zlib.compress(payload.encode(), 9)
    return CURSOR_VERSION + base64.urlsafe_b64encode(packed).decode().rstrip("=")


def decode_cursor(text: str) -> Positions:
    """The positions in a cursor `encode_cursor` made; `MetricsCursorError` for anything else."""
    if len(text) > MAX_CURSOR_CHARS:
        raise MetricsCursorError(text, f"longer than {MAX_CURSOR_CHARS} characters")
    if not text.startswith(CURSOR_VERSION):
        raise MetricsCursorError(text, f"it does not start with {CURSOR_VERSION!r}")
    body = text[len(CURSOR_VERSION) :]
    try:
        inflate = zlib.decompressobj()
        raw = inflate.decompress(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)), MAX_CURSOR_JSON)
        if inflate.unconsumed_tail or not inflate.eof:
            raise ValueError("truncated or too large")
        data = json.loads(raw)
    except (binascii.Error, zlib.error, ValueError):
        raise MetricsCursorError(text, "not the encoding of a cursor") from None
    if not isinstance(data, dict):
        raise MetricsCursorError(text, f"it holds {type(data).__name__}, not an object of files")
    positions: Positions = {}
    for name, value in data.items():
        if (
            not isinstance(value, list)
            or len(value) != 2
            or not all(type(number) is int and number >= 0 for number in value)
        ):
            raise MetricsCursorError(text, f"{name}: {value!r} is not [offset, inode]")
        positions[name] = FilePosition(value[0], value[1])
    return positions


@dataclass
class MetricsPage:
    """The points after a cursor, and the cursor that follows them."""

    points: Update = field(default_factory=dict)  # (replica, metric) -> Series, in file order
    cursor: str = ""
    more: bool = False  # the budget ran out before the end of some file: poll again


def read_page(reader: MetricsReader, after: Mapping[str, FilePosition], budget: int = PAGE_BUDGET) -> MetricsPage:
    """The points a client at positions `after` has not had, up to where `reader` has read.

    Poll the reader first (that is what moves "now"). Each file is read again from the client's
    offset, so one reader serves any number of clients and one client may repeat a cursor; a
    file replaced or truncated since (another inode, or shorter than the offset) is read from
    its start.
    """
    now = reader.positions()
    start: Positions = {}
    for name, position in now.items():
        held = after.get(name)
        if held is None or held.inode != position.inode or held.offset > position.offset:
            held = FilePosition(0, position.inode)  # new to the client, or replaced or truncated
        start[name] = held
    waiting = sorted(name for name in now if start[name].offset < now[name].offset)
    page = MetricsPage()
    budget = max(1, budget)
    floor = min(MIN_FILE_SHARE, budget)
    if len(waiting) * floor > budget:  # many files: the first ones now, the rest next time
        waiting, page.more = waiting[: budget // floor], True
    share = budget // max(1, len(waiting))
    reached = dict(start)
    for name in waiting:
        points, end = reader.read_range(name, start[name].offset, limit=share)
        reached[name] = FilePosition(end, start[name].inode)
        page.more = page.more or end < now[name].offset
        for key, series in points.items():
            held_points = page.points.get(key)
            page.points[key] = series if held_points is None else _joined(held_points, series)
    page.cursor = encode_cursor(reached)
    return page


def _joined(first: Series, second: Series) -> Series:
    """Two files' points of one metric (a replica's JSONL and its event files share names)."""
    return Series(first.steps + second.steps, first.values + second.values, first.times + second.times)
