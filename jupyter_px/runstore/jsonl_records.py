"""Complete JSON lines out of an append-only metrics file, a bounded chunk at a time.

The framing half of reading `metrics/<replica>.jsonl` (the other half, what a record means, is
`MetricsReader`'s): a writer may be mid-line, so only bytes up to the last newline count, and a
read resumes from a line boundary. Files are parsed `READ_CHUNK` bytes at a time, so reading
1,000,000 points never holds the file or its parsed lines whole.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["READ_CHUNK", "decode_lines", "line_start_after", "read_lines"]

#: Bytes of a metrics file parsed at a time: bounds the memory a read needs besides the points.
READ_CHUNK = 1 << 20


def read_lines(path: str, start: int, end: int, ingest: Callable[[bytes], None]) -> int:
    """Hand the complete lines in bytes [start, end) of a JSONL file to `ingest`, READ_CHUNK
    bytes at a time; the offset after the last complete line."""
    done = start
    with open(path, "rb") as f:
        f.seek(start)
        carry = b""
        while done + len(carry) < end:
            block = f.read(min(READ_CHUNK, end - done - len(carry)))
            if not block:
                break
            data = carry + block if carry else block
            cut = data.rfind(b"\n") + 1
            if cut:
                ingest(data[:cut])
                done += cut
            carry = data[cut:]
    return done


def line_start_after(path: str, position: int) -> int:
    """The offset of the first line that starts at or after `position` (0 stays 0); the end of
    the file when no line starts after it."""
    if position <= 0:
        return 0
    with open(path, "rb") as f:
        f.seek(position - 1)
        start = position - 1
        while block := f.read(1 << 16):
            cut = block.find(b"\n")
            if cut >= 0:
                return start + cut + 1
            start += len(block)
        return start


def decode_lines(chunk: bytes, on_bad: Callable[[bytes], None]) -> list[Any]:
    """Complete JSON lines -> records; one json.loads for the whole chunk, per line on error,
    where each line that is not a JSON object goes to `on_bad` instead. The caller still checks
    each record's type: the fast path keeps whatever the lines hold."""
    lines = [line for line in chunk.split(b"\n") if line.strip()]
    try:
        return json.loads(b"[" + b",".join(lines) + b"]")
    except ValueError:
        pass
    records = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict):
            records.append(record)
        else:
            on_bad(line)
    return records
