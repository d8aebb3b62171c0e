"""Tracebacks that point at the notebook: "cell [5], line 8", not `.../runs/<id>/code/main.py, line 8`.

Code shipped from a notebook loses where it came from: a `%%px_distributed` cell becomes
`main.py` (its magic line dropped), `--notebook` joins several cells into one file, and a
function sent by `jupyter_px.submit(fn)` was compiled from a cell whose file the replica does not
have. So whoever ships code also writes a **source map**, `code/sources.json`:

    {"files": {"main.py": [{"first": 1, "count": 12, "offset": 1, "label": "cell [5]",
                            "cell_id": "a1b2", "execution_count": 5, "cell_index": 3,
                            "notebook": "train.ipynb"}, ...]},
     "code":  {"/tmp/ipykernel_81/2718.py": {"label": "cell [5]", "lines": ["def train(): ...\\n"],
                                             "execution_count": 5, "cell_id": null}}}

`files`: lines first..first+count-1 of a shipped file are lines offset+1... of that cell. `code`:
the source of a cell a shipped function was compiled from (the replica puts it in `linecache`, so
its traceback shows the lines too).

In the replica the runner formats an uncaught exception with the frames' locations mapped
(`format_exception`), and keeps a **failure record** (`failure_record`): the exception and the
innermost frame in the user's code with its cell id, execution count and line, which the local
supervisor puts in the replica's status (`ReplicaStatus.failure`) so that the monitor can offer
"Go to cell". A frame the map does not know is printed as Python prints it.

Standard library only: the runner imports it in every replica (and ships it to pods).
"""

from __future__ import annotations

import json
import linecache
import os
import traceback
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..runstore.layout import FAILURE_LOG_PREFIX, FAILURES_DIR

#: The source map's file name in a run's code directory.
SOURCES_FILE = "sources.json"


# ---- writing the map (where the code is shipped) --------------------------------------------------


def cell_label(execution_count: int | None, cell_index: int | None = None) -> str:
    """`cell [5]` (as the notebook shows `[5]:` beside a cell that ran), else by position."""
    if execution_count is not None:
        return f"cell [{execution_count}]"
    if cell_index is not None:
        return f"cell #{cell_index + 1}"
    return "the cell"


def span(first: int, count: int, offset: int = 0, **cell: Any) -> dict[str, Any]:
    """Lines `first`..`first + count - 1` of a shipped file are lines `offset + 1`... of a cell
    (`cell`: execution_count, cell_id, cell_index, notebook, label)."""
    entry = {"first": first, "count": count, "offset": offset, **{k: v for k, v in cell.items() if v is not None}}
    entry.setdefault("label", cell_label(cell.get("execution_count"), cell.get("cell_index")))
    return entry


def source_map(files: Mapping[str, list[dict[str, Any]]] | None = None, code: Mapping[str, Any] | None = None) -> str:
    """The JSON text of `code/sources.json`."""
    return json.dumps({"files": dict(files or {}), "code": dict(code or {})}, indent=1)


# ---- using it (in the replica) ---------------------------------------------------------------------


class SourceMap:
    """A run's source map as a replica reads it: where each shipped line came from."""

    def __init__(self, code_dir: Path, data: Mapping[str, Any] | None = None):
        self.code_dir = str(code_dir)
        data = data or {}
        self.files: dict[str, list[dict[str, Any]]] = dict(data.get("files") or {})
        self.code: dict[str, dict[str, Any]] = dict(data.get("code") or {})
        #: Other names the same files go by (the name IPython compiled a shipped file's text under).
        self.aliases: dict[str, str] = {}

    @classmethod
    def load(cls, code_dir: Path) -> SourceMap:
        try:
            data = json.loads((code_dir / SOURCES_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        return cls(code_dir, data if isinstance(data, dict) else {})

    def install(self) -> None:
        """Put the source of each cell a shipped function came from into `linecache`, so that
        tracebacks (and debuggers) show its lines."""
        for filename, entry in self.code.items():
            lines = [str(line) for line in entry.get("lines") or []]
            linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)

    def where(self, filename: str, lineno: int | None) -> dict[str, Any] | None:
        """The cell a shipped line came from: label, line in the cell, cell id, execution count."""
        if lineno is None:
            return None
        filename = self.aliases.get(filename, filename)
        entry = self.code.get(filename)
        if entry is not None:
            found = {k: v for k, v in entry.items() if k != "lines"}
            found.setdefault("label", cell_label(entry.get("execution_count"), entry.get("cell_index")))
            return {**found, "line": lineno}
        if os.path.dirname(filename) != self.code_dir:
            return None
        for entry in self.files.get(os.path.basename(filename), []):
            first, count = int(entry["first"]), int(entry["count"])
            if first <= lineno < first + count:
                found = {k: v for k, v in entry.items() if k not in ("first", "count", "offset")}
                return {**found, "line": lineno - first + 1 + int(entry.get("offset", 0))}
        return None

    def _stack(self, stack: traceback.StackSummary) -> traceback.StackSummary:
        source_map = self

        class _CellStack(traceback.StackSummary):
            def format_frame_summary(self, frame: traceback.FrameSummary) -> str | None:  # type: ignore[override]
                found = source_map.where(frame.filename, frame.lineno)
                if found is None:
                    return super().format_frame_summary(frame)
                text = f"  {found['label']}, line {found['line']}, in {frame.name}\n"
                if frame.line:
                    text += f"    {frame.line.strip()}\n"
                return text

        mapped = _CellStack()  # (StackSummary.from_list makes a plain StackSummary, whatever the class)
        mapped.extend(stack)
        return mapped

    def format_exception(self, error: BaseException, tb: Any = None) -> str:
        """`traceback.format_exception`, each frame of shipped code named by its cell."""
        shown = traceback.TracebackException(type(error), error, tb if tb is not None else error.__traceback__)
        seen: set[int] = set()
        pending = [shown]
        while pending:
            current = pending.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            current.stack = self._stack(current.stack)
            pending += [e for e in (current.__cause__, current.__context__) if e is not None]
        return "".join(shown.format())

    def failure_record(self, error: BaseException, tb: Any = None) -> dict[str, Any]:
        """What failed and where: the exception, and the innermost frame of shipped code (mapped
        to its cell where the map knows it)."""
        frames = traceback.extract_tb(tb if tb is not None else error.__traceback__)
        record: dict[str, Any] = {
            "exception": "".join(traceback.format_exception_only(type(error), error)).strip().splitlines()[-1]
        }
        for frame in reversed(frames):
            found = self.where(frame.filename, frame.lineno)
            if found is not None:
                record.update(found)
                record["function"] = frame.name
                return record
        for frame in reversed(frames):
            if os.path.dirname(frame.filename) == self.code_dir:
                record.update(label=os.path.basename(frame.filename), line=frame.lineno, function=frame.name)
                break
        return record


def keep_failure(run_dir: Path, record: Mapping[str, Any]) -> None:
    """Keep this process's failure record (`failures/<role>-<index>.json`); where the run
    directory is not writable (a pod) or not the run store's (a host's copy of the run: no
    `PX_METRICS_PATH`, so metrics go through the log too), print it as one `@px-failure {json}`
    line, which the log's reader keeps as the record."""
    key = f"{os.environ.get('PX_TASK_TYPE', 'master')}-{os.environ.get('PX_TASK_INDEX', '0')}"
    process = os.environ.get("LOCAL_RANK") or "0"
    if process != "0":
        key += f".rank{process}"
    text = json.dumps(dict(record))
    target = run_dir / FAILURES_DIR / f"{key}.json"
    kept = False
    try:
        target.parent.mkdir(exist_ok=True)  # replicas failing together (a collective's peers) race here
        tmp = target.with_name(f".{target.name}.{os.getpid()}")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
        kept = True
    except OSError:
        pass
    if not kept or not os.environ.get("PX_METRICS_PATH"):
        print(f"{FAILURE_LOG_PREFIX}{text}", flush=True)


def read_failure(run_dir: Path, role: str, index: int, since: float | None = None) -> dict[str, Any] | None:
    """The failure record a replica's process 0 kept (written at or after `since`), if any."""
    path = run_dir / FAILURES_DIR / f"{role}-{index}.json"
    try:
        if since is not None and path.stat().st_mtime < since - 1.0:
            return None
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def alias_shipped_lines(source_map: SourceMap, shipped: Path, names: Iterable[str]) -> None:
    """Frames compiled from `shipped`'s text under another name (IPython's cell names) are
    mapped as `shipped`'s own."""
    try:
        text = shipped.read_text(encoding="utf-8").splitlines()
    except OSError:
        return
    for name in names:
        if [line.rstrip("\n") for line in linecache.getlines(name)] == text:
            source_map.aliases[name] = str(shipped)
