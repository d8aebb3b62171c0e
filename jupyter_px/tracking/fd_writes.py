"""Raw writes to a file descriptor, for the metrics file and stdout.

`os.write` rather than Python file objects: a SIGKILL keeps exactly what reached the kernel, a
failed write says how much of it did (so the flush knows which points are written), and a line
on stdout is never interleaved with what Python itself has buffered there.
"""

from __future__ import annotations

import os
import sys


def write_all(fd: int, data: bytes) -> None:
    """All of `data` to `fd`, however many `os.write` calls that takes."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def ends_mid_line(fd: int) -> bool:
    """Whether the file ends inside a line: a SIGKILL can cut a large write short at a page
    boundary, and a restarted replica appends to the same file, so its first line must start
    on a line of its own (readers skip the fragment)."""
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


class PartialWrite(OSError):
    """A write that failed after `written` bytes of its data had reached the file."""

    def __init__(self, written: int, error: OSError):
        super().__init__(error.errno, error.strerror)
        self.written = written
        self.error = error


def write_counted(fd: int, data: bytes) -> None:
    """`write_all`, but a failure says how much was written (a PartialWrite)."""
    done = 0
    try:
        while done < len(data):
            done += os.write(fd, data[done:] if done else data)
    except OSError as error:
        raise PartialWrite(done, error) from error


def print_line(line: str) -> None:
    """One whole line on the process's stdout, after whatever Python has buffered there."""
    flush_stdout()
    write_all(1, line.encode("utf-8", "backslashreplace"))


def flush_stdout() -> None:
    """Python's buffered stdout out first, so our raw lines follow it in order."""
    try:
        sys.stdout.flush()
    except Exception:  # a replaced or closed sys.stdout must not break training
        pass
