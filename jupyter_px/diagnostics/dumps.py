"""faulthandler's dump, read back: one block per thread, frames innermost first.

faulthandler writes (CPython 3.11, `Python/traceback.c`, `_Py_DumpTracebackThreads`)::

    Thread 0x00007f3c5d7fe700 (most recent call first):
      File "/usr/lib/python3.11/threading.py", line 320 in wait
      ...

    Current thread 0x00007f3c6a2b8740 (most recent call first):
      File "/runs/abc/code/main.py", line 5 in <module>

It walks the interpreter's thread states from the newest to the oldest, so the main thread (the
first one started) is the last block; "Current" marks whichever thread the kernel delivered the
signal to, which need not be the main one. A frame's file or line may be `???`; a stack deeper
than 100 frames ends with `  ...`; a thread outside any Python code shows `  <no Python frame>`.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9a-fA-F]+)(?: \[[^\]]*\])? \(most recent call first\):$")
_STACK = re.compile(r"^Stack \(most recent call first\):$")
_FRAME = re.compile(r'^  File "(.*)", line (\d+|\?\?\?) in (.*)$')


@dataclass(frozen=True)
class Frame:
    file: str
    line: int | None
    function: str


@dataclass
class Thread:
    ident: str
    current: bool
    #: Innermost first, as faulthandler prints them.
    frames: list[Frame] = field(default_factory=list)
    truncated: bool = False


def parse(text: str) -> list[Thread]:
    """The threads of the last complete dump in `text` (a dump file may hold several, appended);
    the main thread is the last one."""
    dumps: list[list[Thread]] = []
    threads: list[Thread] = []
    for line in text.splitlines():
        header = _THREAD.match(line)
        if header or _STACK.match(line):
            if header and header.group(2) in {t.ident for t in threads}:  # a new dump began
                dumps.append(threads)
                threads = []
            ident = header.group(2) if header else "main"
            threads.append(Thread(ident=ident, current=bool(header and header.group(1).startswith("Current"))))
            continue
        if not threads:
            continue
        frame = _FRAME.match(line)
        if frame:
            file, number, function = frame.groups()
            threads[-1].frames.append(Frame(file, None if number == "???" else int(number), function))
        elif line.strip() == "...":
            threads[-1].truncated = True
    dumps.append(threads)
    return dumps[-1]


def moved(threads: list[Thread], old: str, new: str) -> list[Thread]:
    """`threads` with the frames under the directory `old` read as under `new` (a pod saw the
    run's code at its mount point; the same files are in the run directory here)."""
    prefix = old.rstrip("/") + "/"

    def move(frame: Frame) -> Frame:
        if frame.file.startswith(prefix):
            return dataclasses.replace(frame, file=new.rstrip("/") + "/" + frame.file[len(prefix) :])
        return frame

    return [dataclasses.replace(t, frames=[move(f) for f in t.frames]) for t in threads]
