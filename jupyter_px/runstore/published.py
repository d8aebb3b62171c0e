"""What the run store and the sweep store share: entries (a run's, a sweep's directory) are
published whole with one rename, listed newest first by when they were published, and found by
id, by name (the newest of that name) or as `last`.

An entry's record file is stamped with a nanosecond publication time just before the rename and
never written again, so listing is one stat per entry (no file read) and status writes, which
touch the directory, do not reorder it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from .layout import RUN_ID_PATTERN


def publish(staging: Path, target: Path, record: Path) -> None:
    """Stamp `record` (inside `staging`) with the publication time, then rename `staging` to
    `target`: the entry appears complete or not at all."""
    published_ns = time.time_ns()  # the listing order: finer than the file system's own clock
    os.utime(record, ns=(published_ns, published_ns))
    os.rename(staging, target)


def published_ids(root: Path, record_name: str, *, without_record: bool = False) -> list[str]:
    """The ids of the entries under `root`, newest first (their record's mtime). An entry without
    its record (damaged) is listed by its directory's own mtime when `without_record`, else left
    out. Staging directories (`.new-*`) and names that are no id are never listed."""
    if not root.is_dir():
        return []
    entries = []
    with os.scandir(root) as scan:
        for entry in scan:
            if entry.name.startswith(".") or not RUN_ID_PATTERN.match(entry.name) or not entry.is_dir():
                continue
            try:
                created = os.stat(os.path.join(entry.path, record_name), follow_symlinks=False).st_mtime_ns
            except FileNotFoundError:
                if not without_record:
                    continue
                created = entry.stat().st_mtime_ns
            except OSError:
                continue
            entries.append((created, entry.name))
    return [name for _, name in sorted(entries, reverse=True)]


def newest_named(ids: Iterable[str], name: str, name_of: Callable[[str], str | None]) -> str | None:
    """The first of `ids` (newest first) whose record's name is `name`; entries whose record
    cannot be read are passed over."""
    for entry_id in ids:
        try:
            if name_of(entry_id) == name:
                return entry_id
        except (OSError, ValueError, LookupError):  # deleted, damaged (RunNotFound is a LookupError)
            continue
    return None
