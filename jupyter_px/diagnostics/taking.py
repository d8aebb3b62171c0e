"""Taking a stacks snapshot: signal each live replica, collect what it wrote, keep the result.

The collecting (signal, wait for each dump to grow and settle, read what it added) is
`dump_collect.py`, run where the dumps are: here on the run directory (locally; on Slurm, the
nodes' shared copy of it), inside each pod on Kubernetes (`stack_request.py`). What it found
becomes the snapshot here (`snapshots.build`), kept in the run directory. One taker at a time per
run (a lock file), so an automatic snapshot on a stall and a user's request do not read each
other's dumps.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from ..code.source_map import SourceMap
from ..processes import file_lock
from . import dumps, snapshots
from .dump_collect import WAIT_S, Sender, collect
from .stack_signal import DUMPS_DIR, STACKS_DIR

#: Where the dumps are asked for where the replicas run (pods, hosts), at most this many at once.
PARALLEL_ASKS = 8
P = TypeVar("P")


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
        texts, errors = collect(work / STACKS_DIR / DUMPS_DIR, targets, send, wait_s)
    return keep_snapshot(run_dir, run_id, targets, texts, errors, why=why, taken_at=taken_at, code_dir=work / "code")


def keep_snapshot(
    run_dir: Path,
    run_id: str,
    targets: Mapping[str, int | None],
    texts: Mapping[str, str],
    errors: Mapping[str, str],
    *,
    why: str,
    taken_at: float,
    code_dir: Path | None = None,
    moved_from: str | None = None,
) -> dict[str, Any]:
    """The snapshot of what each replica's dump added (`texts`; `errors`: why the others gave
    none), its frames named by notebook cell, kept in the run directory and returned.
    `moved_from`: where the replicas saw the run directory, when not at `run_dir` (a pod's
    mounted copy): their frames under it are read as the same files under `run_dir`."""
    code_dir = code_dir or run_dir / "code"
    source_map = SourceMap.load(code_dir)
    replicas = []
    for key in sorted({*targets, *texts}):
        pid = targets.get(key)
        if key in texts:
            threads = dumps.parse(texts[key])
            if moved_from:
                threads = dumps.moved(threads, moved_from, str(run_dir))
            replicas.append(snapshots.replica_entry(key, pid, threads, source_map))
        else:
            replicas.append(snapshots.replica_entry(key, pid, None, source_map, errors.get(key, "no stack")))
    snapshot = snapshots.build(run_id, why, replicas, taken_at)
    snapshots.keep(run_dir, snapshot)
    return snapshot


def ask_all(
    places: Sequence[P], ask: Callable[[P], dict[str, Any]], targets: Mapping[str, int | None], nobody: str
) -> tuple[dict[str, str], dict[str, str]]:
    """Ask each place (a pod, a host) for its replicas' dumps at once, by `ask`, which returns
    `stack_request.py`'s answer or `{"failed": why}`; what they added (key -> text) and why the
    others gave none (key -> why): a target no answer covered is told the places' failures, or
    `nobody`."""
    texts: dict[str, str] = {}
    errors: dict[str, str] = {}
    failed: list[str] = []
    if places:
        with ThreadPoolExecutor(max_workers=min(PARALLEL_ASKS, len(places))) as pool:
            answers = list(pool.map(ask, places))
        for answer in answers:
            if "failed" in answer:
                failed.append(answer["failed"])
                continue
            texts.update({key: entry["text"] for key, entry in (answer.get("replicas") or {}).items()})
            errors.update(answer.get("errors") or {})
    for key in targets:
        if key not in texts:
            errors.setdefault(key, "; ".join(failed) or nobody)
    return texts, errors
