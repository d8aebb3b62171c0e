"""The environment fingerprint of a warm template: what it must have been started with to serve
a run, so that a run never forks from a template whose imports a fresh interpreter would not
make the same way.

The facts: the interpreter (its path and version), the modules it preloads, every
site-packages directory's and `PYTHONPATH` entry's count of entries and newest entry's mtime
(`__pycache__` aside: an install or removal changes them, a compiled module does not; a folder
that is no package counts by being there, not by what is written in it), this
package's own newest file where it is a source checkout (an installed one changes with its
site-packages), and the variables read when an interpreter or a framework
starts or imports (PYTHON*, LD_*, OMP_*, MKL_*, TORCH_*, TF_*...: `forkserver.pool.READ_AT_IMPORT`).
The template's state keeps the facts, so a restart can say what changed ("env OMP_NUM_THREADS").
"""

from __future__ import annotations

import hashlib
import json
import os
import site
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...forkserver.pool import reads_at_import


def _mtime(path: str | Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


#: Files an import can load, or that say what is installed (`.pth` lines run at start-up).
_IMPORTABLE_SUFFIXES = (".py", ".pth", ".so", ".pyd", ".zip", ".egg", ".egg-link")


def _importable(entry: os.DirEntry) -> bool:
    """Whether an entry of a path directory can change what an import finds: a package (or
    namespace) directory or an install's metadata directory, a module, a `.pth` file. A log, a
    checkpoint or a CSV the user's code writes beside its modules cannot; `__pycache__` (Python
    writes it at the first import) neither."""
    name = entry.name
    if name == "__pycache__":
        return False
    try:
        if entry.is_dir():
            return name.isidentifier() or name.endswith((".dist-info", ".egg-info", ".libs"))
    except OSError:
        return False
    return name.endswith(_IMPORTABLE_SUFFIXES)


def _entry_mtime(entry: os.DirEntry) -> int:
    """An importable entry's mtime, where its changes can change an import: a module, a `.pth`,
    an install's metadata directory, a regular package by its `__init__.py`. Not a package
    folder's own mtime: that changes whenever something is created in it, and Python creates
    `__pycache__` there at the package's first import where the install compiled nothing (pip's
    `--no-compile`, uv's default); a kernel's first `import pandas` must not retire the template.
    An install or an upgrade writes a new `__init__.py` and a new `.dist-info` folder. A folder
    without `__init__.py` (a checkout's `docs/` or `examples/`, which an import could take only as
    a namespace package) counts by being there: what is written inside it (a docs build, a run's
    outputs) keeps the template."""
    try:
        if entry.is_dir() and not entry.name.endswith((".dist-info", ".egg-info", ".libs")):
            return _mtime(os.path.join(entry.path, "__init__.py"))
        return entry.stat(follow_symlinks=False).st_mtime_ns
    except OSError:
        return 0


def _directory_facts(path: str) -> list[int]:
    """How many importable entries (`_importable`) a directory holds and the newest one's
    mtime (`_entry_mtime`): an install adds entries with new mtimes, a removal lowers the count;
    a file written beside the modules (a run's log, a notebook's output) changes neither."""
    try:
        with os.scandir(path) as entries:
            kept = [entry for entry in entries if _importable(entry)]
            return [len(kept), max((_entry_mtime(entry) for entry in kept), default=0)]
    except OSError:
        return [0, 0]


def _own_files_mtime() -> int:
    """The newest file of this package, where it is a source checkout (an installed package
    changes only with its site-packages directory)."""
    package = Path(__file__).resolve().parents[2]
    newest = 0
    for directory, _dirs, files in os.walk(package):
        for name in files:
            if name.endswith(".py"):
                newest = max(newest, _mtime(os.path.join(directory, name)))
    return newest


def environment_fingerprint(preload: list[str], env: Mapping[str, str]) -> str:
    """What a template that imports `preload` must have been started with to serve a run in `env`."""
    return hashlib.sha256(json.dumps(environment_facts(preload, env), sort_keys=True).encode()).hexdigest()[:16]


def changed_facts(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> str:
    """What differs between two fingerprints' facts, in a few words ("env OMP_NUM_THREADS")."""
    if not old:
        return "unknown"
    changed = []
    for key in sorted(set(old) | set(new)):
        if old.get(key) == new.get(key):
            continue
        if key == "env":
            before, after = dict(old.get("env") or []), dict(new.get("env") or [])
            changed += [f"env {k}" for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)]
        elif key == "sites":
            changed += [f"packages in {p}" for p, m in new.get("sites") or [] if [p, m] not in (old.get("sites") or [])]
        else:
            changed.append(key)
    return ", ".join(changed) or "unknown"


def environment_facts(preload: list[str], env: Mapping[str, str]) -> dict[str, Any]:
    """The facts a fingerprint hashes (kept in the template's state, to say what changed)."""
    installed_in = [*site.getsitepackages(), site.getusersitepackages()]
    sites = [*installed_in, *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)]
    package = Path(__file__).resolve().parents[2]
    installed = any(package.is_relative_to(Path(s).resolve()) for s in installed_in if os.path.isdir(s))
    facts = {
        "python": os.path.realpath(sys.executable),
        "version": sys.version,
        "preload": list(preload),
        "sites": [[s, _directory_facts(s)] for s in sites],
        "package": None if installed else _own_files_mtime(),
        "env": sorted([k, v] for k, v in env.items() if reads_at_import(k) and k != "PYTHONPATH"),
    }
    return json.loads(json.dumps(facts))  # as the state file holds them (lists, not tuples)
