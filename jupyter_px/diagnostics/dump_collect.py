"""Signal replicas for their stacks and read back what each dump added: the part of taking a
snapshot that runs where the dump files are.

Each replica's runner armed `stack_signal.STACKS_SIGNAL` to append a faulthandler dump to its own
file (`<dumps>/<key>.txt`). The collector notes each file's size, signals every replica at once,
then waits (at most `wait_s`) until each file has grown, stopped growing and ends as a whole dump
does (`whole`), and reads only what was added. A replica that does not answer (gone meanwhile, or
started before its runner armed the signal) is listed with why, never waited for longer.

Locally and on Slurm the taker runs it on the run directory (`taking.py`); in a Kubernetes pod,
whose dumps stay on the pod's own volume, `stack_request.py` runs it there. Standard library only:
it is shipped to every pod.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

from ..runstore.layout import PROCESS_INFIX
from .stack_signal import STACKS_SIGNAL

#: How long a taker waits for the replicas' dumps (a dump takes milliseconds; a loaded machine more).
WAIT_S = 5.0
_POLL_S = 0.05
#: How a whole dump ends. faulthandler writes the threads newest first (`_Py_DumpTracebackThreads`),
#: so the main thread's block is the last, and its outermost frame is the program's own: `<module>`
#: of a script or of `-c`, or runpy's `_run_module_as_main` under `-m`; or `...` where the stack was
#: deeper than faulthandler prints. A dump that ends otherwise is still being written: a process
#: descheduled mid-dump on a loaded machine stops growing for a while, and its file read then ended
#: in a helper thread's block (a DataLoader's, taken for the main thread's "wait (threading.py)").
_WHOLE_END = re.compile(
    r'^  (File ".*", line (\d+|\?\?\?) in (<module>|_run_module_as_main)|\.\.\.|<no Python frame>)$'
)


class SignalAll(Protocol):
    """Where the taker cannot signal each pid itself (a Slurm job's tasks run on other nodes):
    one call that makes every replica of the run get `STACKS_SIGNAL`."""

    def signal_all(self) -> None: ...


#: `os.kill`-like (each target's pid), or one call for all of them.
Sender = Callable[[int, int], None] | SignalAll


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read(path: Path, offset: int, size: int | None = None) -> str:
    with open(path, encoding="utf-8", errors="replace") as handle:
        handle.seek(offset)
        return handle.read() if size is None else handle.read(size - offset)


def whole(text: str) -> bool:
    """Whether `text` ends as a whole faulthandler dump does (`_WHOLE_END`)."""
    lines = text.rstrip("\n").splitlines()
    return bool(lines) and _WHOLE_END.match(lines[-1]) is not None


def collect(
    dumps: Path, targets: Mapping[str, int | None], send: Sender = os.kill, wait_s: float = WAIT_S
) -> tuple[dict[str, str], dict[str, str]]:
    """(the new dump text of each replica that answered, why each other one did not). A
    replica's other processes (`processes_per_replica`: its first one is asked, and passes the
    signal on) are in the texts too, as `<key>.rank<N>`, when their files grew meanwhile."""
    offsets = {key: _size(dumps / f"{key}.txt") for key in targets}
    ranks = {path.stem: _size(path) for key in targets for path in dumps.glob(f"{key}{PROCESS_INFIX}*.txt")}
    errors: dict[str, str] = {}
    if callable(send):
        for key, pid in targets.items():
            try:
                send(pid or 0, STACKS_SIGNAL)
            except ProcessLookupError:
                errors[key] = "no stack: its process has ended"
            except PermissionError as error:
                errors[key] = f"no stack: cannot signal pid {pid}: {error.strerror}"
    else:
        send.signal_all()
    pending = {key: -1 for key in targets if key not in errors}
    texts: dict[str, str] = {}
    deadline = time.monotonic() + wait_s
    while pending and time.monotonic() < deadline:
        time.sleep(_POLL_S)
        for key, seen in list(pending.items()):
            size = _size(dumps / f"{key}.txt")
            if size > offsets[key] and size == seen:  # grown, and still for one poll
                text = _read(dumps / f"{key}.txt", offsets[key], size)
                if whole(text):
                    texts[key] = text
                    del pending[key]
                    continue
            pending[key] = size
    for key in pending:
        size = _size(dumps / f"{key}.txt")
        if size > offsets[key]:  # it wrote, but no whole dump in time: what it wrote beats nothing
            texts[key] = _read(dumps / f"{key}.txt", offsets[key], size)
        else:
            errors[key] = f"no stack within {wait_s:g} s (still starting, or its run directory is not writable)"
    if ranks:
        time.sleep(_POLL_S * 4)  # they were signalled after the replica's first process
    for key, offset in ranks.items():
        if _size(dumps / f"{key}.txt") > offset:
            texts[key] = _read(dumps / f"{key}.txt", offset)
    return texts, errors
