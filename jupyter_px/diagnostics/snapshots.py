"""A stacks snapshot: every replica's threads with the shipped code's frames named by their
notebook cell, the replicas grouped by identical main-thread stack, kept in the run directory.

A snapshot is `stacks/<milliseconds since the epoch>.json` in the run directory::

    {"run_id": "...", "taken_at": 1764380000.5, "why": "on request",
     "replicas": [{"key": "worker-1", "pid": 4242, "error": null,
                   "threads": [{"ident": "0x7f..", "main": true, "current": false, "frames":
                                [{"file": "...", "line": 3, "function": "<module>",
                                  "cell": "cell [4]", "cell_line": 3, "code": "time.sleep(60)"}]}]}],
     "groups": [{"replicas": ["master-0", "worker-0"], "summary": "all_reduce <- step, cell [4] line 6"}],
     "text": "2 replicas (master-0, worker-0): ...\\nworker-1: ..."}

Grouping is by the main thread's frames (file, line, function), which is where training runs;
every thread is kept for whoever reads further. A summary names the library call the stack waits
in (`_called`: the innermost frame outside the standard library and private helpers), then the
innermost frame of the user's code (by cell where the source map knows it). When the user's
frame is the innermost one (its code is in a C function such as `time.sleep`, which faulthandler
cannot show) the summary ends with that line's code instead.
"""

from __future__ import annotations

import json
import linecache
import os
import re
import time
from pathlib import Path
from typing import Any

from ..code.source_map import SourceMap
from .dumps import Frame, Thread
from .stack_signal import STACKS_DIR


class NoStacks(LookupError):
    """A run of which no stacks were taken (and that cannot be asked now: it has ended)."""


#: Snapshots kept per run; the oldest beyond this are removed as new ones are taken.
KEEP_SNAPSHOTS = 50


def _code_line(source_map: SourceMap, frame: Frame) -> str | None:
    if frame.line is None:
        return None
    entry = source_map.code.get(frame.file)
    if entry is not None:
        lines = entry.get("lines") or []
        return str(lines[frame.line - 1]).strip() if 0 < frame.line <= len(lines) else None
    return linecache.getline(frame.file, frame.line).strip() or None


def _frame(source_map: SourceMap, frame: Frame) -> dict[str, Any]:
    found = source_map.where(frame.file, frame.line)
    shipped = found is not None or os.path.dirname(frame.file) == source_map.code_dir
    return {
        "file": frame.file,
        "line": frame.line,
        "function": frame.function,
        "cell": found.get("label") if found else None,
        "cell_line": found.get("line") if found else None,
        "user": shipped,
        "code": _code_line(source_map, frame) if shipped else None,
    }


#: A file of Python's standard library (not a package installed beside it), or a frozen module of it.
_STDLIB = re.compile(r"[/\\]lib[/\\]python3\.\d+[/\\](?!(site|dist)-packages[/\\])|^<frozen ")


def _called(frames: list[dict[str, Any]], user: dict[str, Any]) -> str:
    """The library call a stack waits in, as a reader knows it: the innermost frame that is
    neither the standard library's (a queue's or a socket's wait) nor a library's private helper
    (`_try_get_data`), so `__next__ (dataloader.py)` rather than `select`; a special method
    says its file, as its name alone would not."""
    for frame in frames[: frames.index(user)]:
        name = frame["function"]
        if _STDLIB.search(frame["file"]) or (name.startswith("_") and not name.startswith("__")):
            continue
        return f"{name} ({os.path.basename(frame['file'])})" if name.startswith("__") else name
    return str(frames[0]["function"])


def summary(frames: list[dict[str, Any]]) -> str:
    """`all_reduce <- train_step, cell [4] line 42`, `__next__ (dataloader.py) <- <module>, cell
    [4] line 17`, or `<module>, cell [4] line 3: time.sleep(60)`."""
    if not frames:
        return "no Python frame"
    user = next((f for f in frames if f["user"]), None)
    if user is None:
        return f"{frames[0]['function']} ({os.path.basename(frames[0]['file'])}, line {frames[0]['line']})"
    where = (
        f"{user['cell']} line {user['cell_line']}"
        if user["cell"]
        else f"{os.path.basename(user['file'])} line {user['line']}"
    )
    said = f"{user['function']}, {where}"
    if user is frames[0]:
        return f"{said}: {user['code']}" if user["code"] else said
    return f"{_called(frames, user)} <- {said}"


def replica_entry(
    key: str, pid: int | None, threads: list[Thread] | None, source_map: SourceMap, error: str | None = None
) -> dict[str, Any]:
    shown = []
    for position, thread in enumerate(threads or []):
        shown.append(
            {
                "ident": thread.ident,
                "main": position == len(threads or []) - 1,
                "current": thread.current,
                "truncated": thread.truncated,
                "frames": [_frame(source_map, frame) for frame in thread.frames],
            }
        )
    return {"key": key, "pid": pid, "error": error, "threads": shown}


def _main_frames(entry: dict[str, Any]) -> list[dict[str, Any]]:
    return next((t["frames"] for t in entry["threads"] if t["main"]), [])


def group(replicas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Replicas with the same main-thread stack together, the largest group first."""
    groups: dict[tuple, dict[str, Any]] = {}
    for entry in replicas:
        if entry["error"]:
            signature: tuple = ("error", entry["error"])
            said = entry["error"]
        else:
            frames = _main_frames(entry)
            signature = tuple((f["file"], f["line"], f["function"]) for f in frames)
            said = summary(frames)
        groups.setdefault(signature, {"replicas": [], "summary": said})["replicas"].append(entry["key"])
    return sorted(groups.values(), key=lambda g: (-len(g["replicas"]), g["replicas"]))


def describe(groups: list[dict[str, Any]]) -> str:
    """One line per group: `2 replicas (master-0, worker-0): ...` or `worker-1: ...`."""
    lines = []
    for g in groups:
        names = g["replicas"]
        who = names[0] if len(names) == 1 else f"{len(names)} replicas ({', '.join(names)})"
        lines.append(f"{who}: {g['summary']}")
    return "\n".join(lines)


def build(run_id: str, why: str, replicas: list[dict[str, Any]], taken_at: float | None = None) -> dict[str, Any]:
    groups = group(replicas)
    return {
        "run_id": run_id,
        "taken_at": time.time() if taken_at is None else taken_at,
        "why": why,
        "replicas": replicas,
        "groups": groups,
        "text": describe(groups),
    }


def keep(run_dir: Path, snapshot: dict[str, Any]) -> Path:
    """Write `snapshot` into the run's stacks directory (atomically); the oldest beyond
    `KEEP_SNAPSHOTS` go."""
    folder = run_dir / STACKS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{int(snapshot['taken_at'] * 1000)}.json"
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(snapshot, indent=1), encoding="utf-8")
    os.replace(tmp, path)
    for old in kept(run_dir)[:-KEEP_SNAPSHOTS]:
        old.unlink(missing_ok=True)
    return path


def kept(run_dir: Path) -> list[Path]:
    """The snapshots kept for a run, oldest first."""
    try:
        names = os.listdir(run_dir / STACKS_DIR)
    except OSError:
        return []
    stamps = sorted(int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit())
    return [run_dir / STACKS_DIR / f"{stamp}.json" for stamp in stamps]


def latest(run_dir: Path) -> dict[str, Any] | None:
    """The newest snapshot kept for a run, if any."""
    for path in reversed(kept(run_dir)):
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
    return None
