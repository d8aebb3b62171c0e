"""The run store on disk: create runs, read and atomically update their record and status.

Readers never see a half-written file (write to a temporary file, then rename), and a run
directory is only published (renamed into place) once its record and code are complete, so a
failed submission leaves nothing behind.
"""

from __future__ import annotations

import codecs
import getpass
import logging
import os
import platform
import secrets
import shutil
import socket
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, TypeVar

from .errors import RunDamaged, RunNotFound, StoreUnusable
from .files import atomic_write_bytes, atomic_write_json
from .layout import (
    RECORD_FILE,
    RESULT_KEY_FILE,
    InvalidRunId,
    RunPaths,
    px_home,
    runs_root,
)
from .models import RunRecord, RunStatus
from .published import newest_named, publish, published_ids
from .run_files import PlantedLink, open_run_file
from .sweeps import SweepStore

_Model = TypeVar("_Model", RunRecord, RunStatus)

logger = logging.getLogger(__name__)

#: Default (and iter_log's) bound on the bytes of one log read: memory does not grow with a log.
LOG_CHUNK_BYTES = 1 << 20


def _versions() -> dict[str, str]:
    from .._version import __version__

    return {"python": platform.python_version(), "jupyter_px": __version__}


class RunStore:
    """All runs under one root (default `$PX_HOME/runs`), and the sweeps beside them (`sweeps`:
    `$PX_HOME/sweeps`, whose trials are runs of this store): one store for both, so a sweep and
    its trials are always read from the same home."""

    def __init__(self, home: Path | str | None = None):
        self.home = Path(home) if home else px_home()
        self.root = runs_root(self.home)
        if self.home.exists() and not self.home.is_dir():
            named = "PX_HOME" if home is None and os.environ.get("PX_HOME") else "the store's folder"
            raise StoreUnusable(
                f"{named} {str(self.home)!r} is not a folder: point PX_HOME at a folder (or unset it for ~/.jupyter_px)"
            )
        if self.root.exists() and not self.root.is_dir():
            raise StoreUnusable(f"the run store {str(self.root)!r} is not a folder: move that file away")
        self.sweeps = SweepStore(self.home)

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
        if not self.root.is_dir():  # private like the run directories in it (mkdtemp: 0700)
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
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
            # mkstemp's 0600: only this user reads the secret the replicas sign their results with
            atomic_write_bytes(staged.root / RESULT_KEY_FILE, secrets.token_hex(32).encode())
            atomic_write_json(staged.record, record.model_dump(mode="json"))
            atomic_write_json(staged.status, RunStatus(run_id=record.run_id).model_dump(mode="json"))
            publish(staging, paths.root, staged.record)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return paths

    # ---- reading -------------------------------------------------------------------------------
    def exists(self, run_id: str) -> bool:
        return self.paths(run_id).record.exists()

    def _require(self, run_id: str) -> RunPaths:
        """The paths of a run with a record: RunNotFound without its directory, RunDamaged without its record."""
        paths = self._run_dir(run_id)
        if not paths.record.exists():
            raise RunDamaged(run_id, f"{RECORD_FILE} is missing")
        return paths

    def record(self, run_id: str) -> RunRecord:
        paths = self._require(run_id)
        return _load(RunRecord, paths, paths.record)

    def status(self, run_id: str, *, without_record: bool = False) -> RunStatus:
        """The run's status; `without_record`: also for a run whose record is missing or damaged
        (whether it finished decides whether it may be deleted)."""
        paths = self._run_dir(run_id) if without_record else self._require(run_id)
        return _load(RunStatus, paths, paths.status)

    def _run_dir(self, run_id: str) -> RunPaths:
        """The paths of a run whose directory exists, whatever is in it."""
        try:
            paths = self.paths(run_id)
        except InvalidRunId as error:
            raise RunNotFound(str(error)) from None
        if not paths.root.is_dir():
            raise RunNotFound(f"no run {run_id!r} in {self.root}")
        return paths

    def write_status(self, status: RunStatus) -> None:
        status.updated_at = time.time()
        atomic_write_bytes(self._require(status.run_id).status, status.model_dump_json(indent=1).encode())

    def run_ids(self) -> list[str]:
        """Run ids, newest first: by when each run was published (its record's mtime).

        `create()` stamps the record with a nanosecond creation time and nothing writes the
        record again, so status writes (which touch the run directory) do not reorder runs. One
        stat per run: listing 1,000 runs reads no file. A directory without a record (damaged)
        sorts by its own mtime; `list()` skips it.
        """
        return published_ids(self.root, RECORD_FILE, without_record=True)

    def list(self, limit: int | None = None) -> list[tuple[RunRecord, RunStatus]]:
        """(record, status) pairs, newest first (`run_ids()`' order); damaged runs (a missing
        or unreadable record or status) are skipped, the others listed."""
        out = []
        for run_id in self.run_ids():
            try:
                out.append((self.record(run_id), self.status(run_id)))
            except (RunDamaged, RunNotFound) as error:
                logger.debug("skipping run %s: %s", run_id, error)
                continue
            except OSError as error:
                logger.warning("skipping run %s: %s", run_id, error)
                continue
            if limit and len(out) >= limit:
                break
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
            if self.exists(ref) or self.paths(ref).root.is_dir():  # a run without a record is damaged
                return ref
        except InvalidRunId:
            pass
        named = newest_named(self.run_ids(), ref, lambda run_id: self.record(run_id).name)
        if named is None:
            raise RunNotFound(f"no run with id or name {ref!r} in {self.root}")
        return named

    def iter_log(
        self, run_id: str, role: str, index: int, offset: int = 0, chunk_size: int = LOG_CHUNK_BYTES
    ) -> Iterator[tuple[str, int]]:
        """(text, next offset) chunks of a replica's log from `offset` to its current end.

        Memory stays at one chunk whatever the log's size: `jupyter px logs`, `run.logs()` and
        `--wait` stream through this instead of reading whole files. A negative `offset` starts
        that many bytes before the end (a tail). Each chunk ends at a character boundary."""
        paths = self._require(run_id)
        handle = _open_log(paths, role, index)
        if handle is None:
            return
        with handle:
            if offset < 0:
                offset = _tail_start(handle, offset)
            while True:
                text, next_offset = _read_text(handle, offset, chunk_size)
                if next_offset == offset:
                    return
                offset = next_offset
                yield text, offset

    def delete(self, run_id: str) -> None:
        shutil.rmtree(self._run_dir(run_id).root)

    def read_log(
        self, run_id: str, role: str, index: int, offset: int = 0, limit: int | None = LOG_CHUNK_BYTES
    ) -> tuple[str, int]:
        """Log text from byte `offset` (at most `limit` bytes, default 1 MiB) and the offset to
        continue from; a negative `offset` starts that many bytes before the end.

        Bounded whatever the log's size: read on from the returned offset (or use `iter_log`)
        for more. The text ends at a character boundary and the returned offset resumes at the
        first byte not decoded, so a UTF-8 character split across two reads (or still being
        written) comes back whole on the next read instead of as U+FFFD."""
        handle = _open_log(self._require(run_id), role, index)
        if handle is None:
            return "", max(0, offset)
        with handle:
            if offset < 0:
                offset = _tail_start(handle, offset)
            return _read_text(handle, offset, limit or LOG_CHUNK_BYTES)


def _open_log(paths: RunPaths, role: str, index: int) -> BinaryIO | None:
    """A replica's log opened for reading (never through a link: `run_files`), None if it has none
    yet; RunDamaged when a link (or another odd file) was planted in its place."""
    try:
        return open_run_file(paths.root, paths.log(role, index))
    except FileNotFoundError:
        return None
    except PlantedLink as link:
        raise RunDamaged(paths.run_id, str(link)) from None


def _tail_start(handle: BinaryIO, offset: int) -> int:
    """The offset `-offset` bytes before the end, moved past continuation bytes so that the
    tail starts on a character."""
    handle.seek(0, os.SEEK_END)
    start = max(0, handle.tell() + offset)
    if start:
        handle.seek(start)
        head = handle.read(3)
        for byte in head:
            if byte & 0xC0 != 0x80:  # not a UTF-8 continuation byte
                break
            start += 1
    return start


def _read_text(handle: BinaryIO, offset: int, limit: int) -> tuple[str, int]:
    """At most about `limit` bytes from `offset`, decoded as UTF-8 up to the last complete
    character; the offset of the first byte not decoded.

    An incomplete sequence at the end of the read is left for the next read; where that would
    leave nothing (a chunk smaller than one character), up to 3 more bytes complete it. Bytes
    that are not UTF-8 at all become U+FFFD, as before."""
    handle.seek(offset)
    data = handle.read(max(1, limit))
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    text = decoder.decode(data)
    pending = len(decoder.getstate()[0])
    if pending and not text:
        more = handle.read(4 - pending)
        data += more
        text = decoder.decode(more)
        pending = len(decoder.getstate()[0])
    return text, offset + len(data) - pending


def read_tail(path: Path, limit: int) -> str:
    """The last `limit` bytes of a file as text ("" if it cannot be read), without reading the
    rest: for a failed process's error output in a message."""
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return ""
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - limit))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _load(model: type[_Model], paths: RunPaths, path: Path) -> _Model:
    """Read and validate one of a run's JSON files; RunDamaged (one line) when it cannot be."""
    run_id = paths.run_id
    try:
        with open_run_file(paths.root, path) as handle:
            data = handle.read()
    except FileNotFoundError:
        raise RunDamaged(run_id, f"{path.name} is missing") from None
    except PlantedLink as link:
        raise RunDamaged(run_id, str(link)) from None
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
