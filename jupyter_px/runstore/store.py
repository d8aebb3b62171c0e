"""The run store on disk: create runs, read and atomically update their record and status.

Readers never see a half-written file (write to a temporary file, then rename), and a run
directory is only published (renamed into place) once its record and code are complete, so a
failed submission leaves nothing behind.
"""

from __future__ import annotations

import getpass
import json
import os
import platform
import secrets
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from .layout import InvalidRunId, RunPaths, px_home, runs_root, validate_run_id
from .models import ReplicaStatus, RunRecord, RunStatus

_Model = TypeVar("_Model", RunRecord, RunStatus)


class RunNotFound(KeyError):
    def __str__(self) -> str:  # KeyError quotes its argument; a message reads better
        return str(self.args[0])


class RunDamaged(ValueError):
    """A run directory whose record or status is missing or unreadable (a crash, a full disk,
    a hand edit). Its message is one line naming the run and the damage; listings skip the run,
    commands that need it report the message instead of a traceback."""

    def __init__(self, run_id: str, what: str):
        self.run_id = run_id
        self.what = what
        super().__init__(f"run {run_id} is damaged: {what}")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        with _suppress():
            os.unlink(tmp)
        raise


def atomic_write_json(path: Path, data: object) -> None:
    atomic_write_bytes(path, json.dumps(data, indent=1, default=str).encode())


class _suppress:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return exc[0] is not None and issubclass(exc[0], OSError)


def new_run_id(name: str | None = None) -> str:
    """`<name>-<6 hex>`, or `run-<yymmdd>-<6 hex>`: unique, sortable-ish, valid everywhere."""
    suffix = secrets.token_hex(3)
    if name:
        slug = "".join(c if c.isascii() and c.isalnum() else "-" for c in name.lower()).strip("-")
        slug = "-".join(part for part in slug.split("-") if part)[:30].strip("-")
        if slug:
            return validate_run_id(f"{slug}-{suffix}")
    return f"run-{time.strftime('%y%m%d')}-{suffix}"


def _versions() -> dict[str, str]:
    from .. import __version__

    return {"python": platform.python_version(), "jupyter_px": __version__}


class RunStore:
    """All runs under one root (default `$PX_HOME/runs`)."""

    def __init__(self, home: Path | str | None = None):
        self.home = Path(home) if home else px_home()
        self.root = runs_root(self.home)

    def paths(self, run_id: str) -> RunPaths:
        return RunPaths(run_id, self.home)

    # ---- creating ------------------------------------------------------------------------------
    def create(
        self, record: RunRecord, code_files: dict[str, bytes | str], extra_files: dict[str, bytes] | None = None
    ) -> RunPaths:
        """Write a complete run directory, then publish it with one rename (all or nothing)."""
        paths = self.paths(record.run_id)
        if paths.root.exists():
            raise FileExistsError(f"run {record.run_id} already exists")
        record.user = record.user or _user()
        record.host = record.host or socket.gethostname()
        record.versions = {**_versions(), **record.versions}
        self.root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=self.root, prefix=f".new-{record.run_id}-"))
        try:
            staged = RunPaths.__new__(RunPaths)
            staged.run_id, staged.root = record.run_id, staging
            for directory in (
                staged.code_dir,
                staged.logs_dir,
                staged.metrics_dir,
                staged.params_dir,
                staged.outputs_dir,
                staged.tensorboard_dir,
            ):
                directory.mkdir(parents=True)
            for name, content in code_files.items():
                target = (staged.code_dir / name).resolve()
                if staged.code_dir.resolve() not in target.parents:
                    raise ValueError(f"code file name {name!r} leaves the code directory")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content.encode() if isinstance(content, str) else content)
            for name, content in (extra_files or {}).items():
                atomic_write_bytes(staged.root / name, content)
            atomic_write_json(staged.record, record.model_dump(mode="json"))
            atomic_write_json(staged.status, RunStatus(run_id=record.run_id).model_dump(mode="json"))
            os.rename(staging, paths.root)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return paths

    # ---- reading -------------------------------------------------------------------------------
    def exists(self, run_id: str) -> bool:
        return self.paths(run_id).record.exists()

    def _require(self, run_id: str) -> RunPaths:
        try:
            paths = self.paths(run_id)
        except InvalidRunId as error:
            raise RunNotFound(str(error)) from None
        if not paths.record.exists():
            raise RunNotFound(f"no run {run_id!r} in {self.root}")
        return paths

    def record(self, run_id: str) -> RunRecord:
        return _load(RunRecord, self._require(run_id).record, run_id)

    def status(self, run_id: str) -> RunStatus:
        return _load(RunStatus, self._require(run_id).status, run_id)

    def write_status(self, status: RunStatus) -> None:
        status.updated_at = time.time()
        atomic_write_bytes(self._require(status.run_id).status, status.model_dump_json(indent=1).encode())

    def run_ids(self) -> list[str]:
        """Run ids, newest first (by directory creation order)."""
        if not self.root.exists():
            return []
        entries = []
        with os.scandir(self.root) as scan:
            for entry in scan:
                if entry.is_dir() and not entry.name.startswith("."):
                    try:
                        validate_run_id(entry.name)
                    except InvalidRunId:
                        continue
                    entries.append((entry.stat().st_mtime, entry.name))
        return [name for _, name in sorted(entries, reverse=True)]

    def list(self, limit: int | None = None) -> list[tuple[RunRecord, RunStatus]]:
        """(record, status) pairs, newest first; runs that cannot be read are skipped."""
        out = []
        for run_id in self.run_ids():
            try:
                out.append((self.record(run_id), self.status(run_id)))
            except (OSError, ValueError, RunNotFound):
                continue
            if limit and len(out) >= limit:
                break
        out.sort(key=lambda pair: pair[0].created_at, reverse=True)
        return out

    def resolve(self, ref: str) -> str:
        """The run id a user means by `ref`: a run id, a run name (its newest run), or `last`.

        Users type what they called a run (`--name utf`), not the id with its random suffix,
        so every surface (CLI, magics, API, REST) resolves references through here.
        """
        if not isinstance(ref, str) or not ref:
            raise RunNotFound(f"no run {ref!r}: give a run id, a run name or 'last'")
        if ref == "last":
            for run_id in self.run_ids():
                if self.paths(run_id).record.exists():
                    return run_id
            raise RunNotFound(f"no runs yet in {self.root}")
        try:
            if self.exists(ref):
                return ref
        except InvalidRunId:
            pass
        for run_id in self.run_ids():
            try:
                if self.record(run_id).name == ref:
                    return run_id
            except (OSError, ValueError, RunNotFound):
                continue
        raise RunNotFound(f"no run with id or name {ref!r} in {self.root}")

    def iter_log(
        self, run_id: str, role: str, index: int, offset: int = 0, chunk_size: int = 1 << 20
    ) -> Iterator[tuple[str, int]]:
        """(text, next offset) chunks of a replica's log from `offset` to its current end.

        Memory stays at one chunk whatever the log's size: `jupyter px logs`, `run.logs()` and
        `--wait` stream through this instead of reading whole files."""
        while True:
            text, next_offset = self.read_log(run_id, role, index, offset, limit=chunk_size)
            if next_offset == offset:
                return
            offset = next_offset
            yield text, offset

    def delete(self, run_id: str) -> None:
        shutil.rmtree(self._require(run_id).root)

    def read_log(
        self, run_id: str, role: str, index: int, offset: int = 0, limit: int | None = None
    ) -> tuple[str, int]:
        """Log text from byte `offset` (at most `limit` bytes) and the offset to continue from."""
        path = self._require(run_id).log(role, index)
        if not path.exists():
            return "", offset
        with open(path, "rb") as handle:
            if offset < 0:  # tail: the last -offset bytes
                handle.seek(0, os.SEEK_END)
                offset = max(0, handle.tell() + offset)
            handle.seek(offset)
            data = handle.read(limit) if limit else handle.read()
        return data.decode(errors="replace"), offset + len(data)


def read_tail(path: Path, limit: int) -> str:
    """The last `limit` bytes of a file as text ("" if it cannot be read), without reading the
    rest: for a failed process's error output in a message."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - limit))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _load(model: type[_Model], path: Path, run_id: str) -> _Model:
    """Read and validate one of a run's JSON files; RunDamaged (one line) when it cannot be."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RunDamaged(run_id, f"{path.name} is missing") from None
    try:
        return model.model_validate_json(data)
    except ValueError as error:  # pydantic's ValidationError is a ValueError
        first = str(error).splitlines()[1:2] or [str(error)]
        raise RunDamaged(run_id, f"{path.name} is not valid ({first[0].strip()[:120]})") from None


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def initial_status(run_id: str, replicas: Iterable[tuple[str, int]]) -> RunStatus:
    return RunStatus(run_id=run_id, replicas=[ReplicaStatus(role=r, index=i) for r, i in replicas])


def python_executable() -> str:
    return sys.executable
