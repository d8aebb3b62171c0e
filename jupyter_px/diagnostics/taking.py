"""Taking a stacks snapshot: signal each live replica, collect what it wrote, keep the result.

Each replica's runner armed `stack_signal.STACKS_SIGNAL` to append a faulthandler dump to its own
file (`stacks/dumps/<key>.txt`). The taker notes each file's size, signals every replica at once,
then waits (at most `wait_s`) until each file has grown and stopped growing, and reads only what
was added. One taker at a time per run (a lock file), so the supervisor's automatic snapshot on a
stall and a user's request do not read each other's dumps. A replica that does not answer (gone
meanwhile, or started before its runner armed the signal) is listed with why, never waited for
longer.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from ..code.source_map import SourceMap
from ..processes import file_lock
from ..runstore.layout import PROCESS_INFIX
from . import dumps, snapshots
from .stack_signal import STACKS_DIR, STACKS_SIGNAL, dump_path

#: How long a taker waits for the replicas' dumps (a dump takes milliseconds; a loaded machine more).
WAIT_S = 5.0
_POLL_S = 0.05


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _collect(
    run_dir: Path, targets: Mapping[str, int | None], send: Sender, wait_s: float
) -> tuple[dict[str, str], dict[str, str]]:
    """(the new dump text of each replica that answered, why each other one did not). A
    replica's other processes (`processes_per_replica`: its first one is asked, and passes the
    signal on) are in the texts too, as `<key>.rank<N>`, when their files grew meanwhile."""
    offsets = {key: _size(dump_path(run_dir, key)) for key in targets}
    ranks = {
        path.stem: _size(path)
        for key in targets
        for path in dump_path(run_dir, key).parent.glob(f"{key}{PROCESS_INFIX}*.txt")
    }
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
            size = _size(dump_path(run_dir, key))
            if size > offsets[key] and size == seen:  # grown, and still for one poll: written
                with open(dump_path(run_dir, key), encoding="utf-8", errors="replace") as handle:
                    handle.seek(offsets[key])
                    texts[key] = handle.read(size - offsets[key])
                del pending[key]
            else:
                pending[key] = size
    for key in pending:
        errors[key] = f"no stack within {wait_s:g} s (still starting, or its run directory is not writable)"
    if ranks:
        time.sleep(_POLL_S * 4)  # they were signalled after the replica's first process
    for key, offset in ranks.items():
        if _size(dump_path(run_dir, key)) > offset:
            with open(dump_path(run_dir, key), encoding="utf-8", errors="replace") as handle:
                handle.seek(offset)
                texts[key] = handle.read()
    return texts, errors


class SignalAll(Protocol):
    """Where the taker cannot signal each pid itself (a Slurm job's tasks run on other nodes):
    one call that makes every replica of the run get `STACKS_SIGNAL`."""

    def signal_all(self) -> None: ...


#: `os.kill`-like (each target's pid), or one call for all of them.
Sender = Callable[[int, int], None] | SignalAll


def take(
    run_dir: Path,
    run_id: str,
    targets: Mapping[str, int | None],
    *,
    why: str = "on request",
    send: Sender = os.kill,
    wait_s: float = WAIT_S,
    work_dir: Path | None = None,
) -> dict[str, Any]:
    """Signal `targets` (replica key -> pid), build the snapshot (`snapshots.build`), keep it in
    the run directory and return it. `work_dir`: where the replicas run and write their dumps,
    when that is not the run directory (a Slurm run's copy on the nodes' shared filesystem)."""
    run_dir = run_dir.resolve()  # the runner resolves it: the frames' file names start so
    work = (work_dir or run_dir).resolve()
    with file_lock.locked(work / STACKS_DIR / ".lock"):
        taken_at = time.time()
        texts, errors = _collect(work, targets, send, wait_s)
    source_map = SourceMap.load(work / "code")
    replicas = []
    for key in sorted({*targets, *texts}):
        pid = targets.get(key)
        if key in texts:
            replicas.append(snapshots.replica_entry(key, pid, dumps.parse(texts[key]), source_map))
        else:
            replicas.append(snapshots.replica_entry(key, pid, None, source_map, errors[key]))
    snapshot = snapshots.build(run_id, why, replicas, taken_at)
    snapshots.keep(run_dir, snapshot)
    return snapshot
