"""Complete JSON lines out of an append-only metrics file, a bounded chunk at a time.

The framing half of reading `metrics/<replica>.jsonl` (the other half, what a record means, is
`MetricsReader`'s): a writer may be mid-line, so only bytes up to the last newline count, and a
read resumes from a line boundary. Files are parsed `READ_CHUNK` bytes at a time, so reading
1,000,000 points never holds the file or its parsed lines whole, and a line longer than
`MAX_LINE_BYTES` (written by something else, or never ended) is skipped once and reported
instead of being re-read and held on every poll.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, BinaryIO, NamedTuple

__all__ = ["MAX_LINE_BYTES", "READ_CHUNK", "LinesRead", "decode_lines", "line_start_after", "read_lines"]

#: Bytes of a metrics file parsed at a time: bounds the memory a read needs besides the points.
READ_CHUNK = 1 << 20
#: A metrics line longer than this is no record `log_metrics` writes: it is skipped, not held
#: (at least READ_CHUNK, so a line that ends within one block never needs the check).
MAX_LINE_BYTES = READ_CHUNK


class LinesRead(NamedTuple):
    """Where a read stopped, and what it skipped.

    `offset`: the bytes before it are done with (ingested, or skipped). It is at a line boundary
    unless `skipping`: then it is inside an over-long line whose end has not been written yet,
    and the next read (given `skipping=True`) discards up to that line's newline without
    looking at what came before it. `long_lines`: over-long lines this read began skipping,
    each counted once however many reads its bytes span."""

    offset: int
    skipping: bool = False
    long_lines: int = 0


def read_lines(
    path: str,
    start: int,
    end: int,
    ingest: Callable[[bytes], None],
    *,
    skipping: bool = False,
    max_line: int = MAX_LINE_BYTES,
    opener: Callable[[str], BinaryIO] | None = None,
) -> LinesRead:
    """Hand the complete lines in bytes [start, end) of a JSONL file to `ingest`, READ_CHUNK
    bytes at a time.

    Work and memory are bounded by the bytes read, never by a line's length: each block is
    searched once, the incomplete line carried between blocks is at most `max_line` bytes, and a
    line that grows beyond that is skipped (reported in `long_lines`) rather than held, so an
    unterminated 300 MB line costs each later read only the bytes appended since."""
    done = pos = start
    carry = b""  # the current line's bytes so far (it began at `done`), at most max_line
    long_lines = 0
    with opener(path) if opener else open(path, "rb") as f:
        f.seek(start)
        while pos < end:
            block = f.read(min(READ_CHUNK, end - pos))
            if not block:
                break
            base, pos = pos, pos + len(block)
            if skipping:  # inside an over-long line: drop bytes up to its newline
                newline = block.find(b"\n")
                if newline < 0:
                    done = pos
                    continue
                skipping, block, base = False, block[newline + 1 :], base + newline + 1
                done = base
            elif carry:  # finish the line the last block began
                newline = block.find(b"\n")
                if newline < 0:
                    if len(carry) + len(block) > max_line:
                        carry, skipping, done, long_lines = b"", True, pos, long_lines + 1
                    else:
                        carry += block
                    continue
                if len(carry) + newline > max_line:
                    long_lines += 1
                else:
                    ingest(carry + block[: newline + 1])
                carry, block, base = b"", block[newline + 1 :], base + newline + 1
                done = base
            cut = block.rfind(b"\n") + 1
            if cut:
                ingest(block[:cut])
                done = base + cut
            carry = block[cut:]
            if len(carry) > max_line:
                carry, skipping, done, long_lines = b"", True, pos, long_lines + 1
    return LinesRead(done, skipping, long_lines)


def line_start_after(
    path: str, position: int, scan: int | None = None, opener: Callable[[str], BinaryIO] | None = None
) -> int:
    """The offset of the first line that starts at or after `position` (0 stays 0); the end of
    the file when no line starts after it. With `scan`, at most that many bytes are looked at:
    inside a longer line, `position + scan` (a point within an over-long line, which a read
    from there skips)."""
    if position <= 0:
        return 0
    with opener(path) if opener else open(path, "rb") as f:
        f.seek(position - 1)
        start = position - 1
        while block := f.read(1 << 16):
            cut = block.find(b"\n")
            if cut >= 0:
                return start + cut + 1
            start += len(block)
            if scan is not None and start - position >= scan:
                return position + scan
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
