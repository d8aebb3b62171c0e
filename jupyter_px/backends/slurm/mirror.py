"""Copying a run's files from its directory under `shared_dir` back into the run store.

When `$PX_HOME` is not on a filesystem the compute nodes share, the `shared_dir` setting names one
that is: the run's directory is prepared there (record, code, plan), the tasks write their logs,
metrics, params, TensorBoard files and outputs there, and the run's follower copies what is new
into the run store on every poll (and once more at the end), so the monitor, `%px_logs`, the
sidebar and TensorBoard read the store as for any run.

Logs, metrics (JSON lines) and event files only grow: the new bytes are appended (a file that
shrank is copied again). Params and outputs are copied whole when their size or time changed.
Links are never followed: only regular files are copied, and nothing outside the run's folders.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from ...runstore import atomic_write_bytes

#: Folders whose files only grow (appended to) / are rewritten whole.
APPENDED = ("logs", "metrics", "tensorboard")
REWRITTEN = ("params", "outputs")


def _regular_files(folder: Path):
    if not folder.is_dir() or folder.is_symlink():
        return
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
        for name in files:
            path = Path(root, name)
            try:
                info = path.lstat()
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and not name.startswith("."):
                yield path, info


def _append_new(source: Path, size: int, target: Path) -> None:
    have = target.stat().st_size if target.exists() else 0
    if have > size:  # the source was rewritten: start again
        target.unlink()
        have = 0
    if have == size:
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(source, "rb") as src, open(target, "ab") as dst:
        src.seek(have)
        shutil.copyfileobj(src, dst, 1 << 20)


def sync(shared: Path, run_dir: Path) -> None:
    """Bring `run_dir`'s logs, metrics, params, TensorBoard files and outputs up to `shared`'s."""
    for folder in APPENDED:
        for path, info in _regular_files(shared / folder):
            _append_new(path, info.st_size, run_dir / path.relative_to(shared))
    for folder in REWRITTEN:
        for path, info in _regular_files(shared / folder):
            target = run_dir / path.relative_to(shared)
            try:
                same = target.stat().st_size == info.st_size and target.stat().st_mtime >= info.st_mtime
            except OSError:
                same = False
            if not same:
                atomic_write_bytes(target, path.read_bytes())


def prepare(run_dir: Path, shared: Path) -> None:
    """The run's directory under `shared_dir`: a copy of its record and code, empty output folders."""
    shared.mkdir(parents=True, exist_ok=False, mode=0o700)
    for name in ("record.json", "status.json"):
        if (run_dir / name).exists():
            shutil.copy2(run_dir / name, shared / name)
    shutil.copytree(run_dir / "code", shared / "code")
    for folder in (*APPENDED, *REWRITTEN, "slurm"):
        (shared / folder).mkdir(exist_ok=True)
