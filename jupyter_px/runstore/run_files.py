"""Reading a run's files without following links: every read stays inside the run directory.

Replicas run the user's training code, as the user who runs the Jupyter server, with write access
to their own run directory. Code that replaces `logs/worker-0.log` with a symbolic link to another
file would otherwise make `GET px/api/runs/<id>/logs` (and `jupyter px logs`, the metrics routes,
TensorBoard...) serve that file to anyone the deployment's Authorizer lets read runs. So every
reader opens a run's files through here:

* each folder from the run directory down, and the file itself, is opened relative to the one
  above it (`openat`) with `O_NOFOLLOW`, so no link anywhere on the way is followed, whatever
  was planted and whenever;
* the file must be a regular file with a single name: a hard link to `~/.ssh/id_rsa` made in
  the run directory is as bad as a symbolic one, and a FIFO would hang the reader;
* a refused path raises `PlantedLink`, an `OSError` (readers that skip an unreadable file skip
  it) whose message says what was found; the store turns it into `RunDamaged` for the routes
  and commands that report a run's problems.

The store's root (`$PX_HOME/runs`) is the user's own and trusted; everything below it is not.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class PlantedLink(PermissionError):
    """A path inside a run directory that is a link (symbolic or hard) or not a regular file:
    never read. The message names it relative to the run directory."""

    def __init__(self, relative: str, what: str):
        super().__init__(errno.ELOOP, f"{relative} {what}: it is not served")
        self.relative = relative
        self.what = what

    def __str__(self) -> str:
        return self.strerror or ""


def _relative(run_root: Path, path: str | os.PathLike) -> tuple[str, ...]:
    root = os.path.abspath(run_root)
    target = os.path.abspath(path)
    if target != root and not target.startswith(root + os.sep):
        raise PlantedLink(str(path), f"is outside the run directory {root}")
    return tuple(part for part in target[len(root) :].split(os.sep) if part)


def _open_dir(run_root: Path, parts: tuple[str, ...]) -> int:
    """A descriptor of the folder `run_root/parts...`, no link followed from the run directory down."""
    root = os.path.abspath(run_root)
    parent = os.open(os.path.dirname(root), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the store's root
    try:
        for depth, name in enumerate((os.path.basename(root), *parts)):
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(parent, name):
                    raise PlantedLink("/".join(parts[:depth]) or "the run directory", "is a symbolic link") from None
                raise
            os.close(parent)
            parent = fd
        return parent
    except BaseException:
        os.close(parent)
        raise


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def open_run_file(run_root: Path, path: str | os.PathLike) -> BinaryIO:
    """`path` (inside `run_root`) opened for reading as a binary file object, never through a
    link. Raises FileNotFoundError as `open` does, PlantedLink for a link or a special file."""
    parts = _relative(run_root, path)
    if not parts:
        raise IsADirectoryError(errno.EISDIR, "the run directory itself", str(path))
    folder = _open_dir(run_root, parts[:-1])
    try:
        try:
            fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=folder)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise PlantedLink("/".join(parts), "is a symbolic link") from None
            raise
    finally:
        os.close(folder)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PlantedLink("/".join(parts), "is not a regular file")
        # (0 names: replaced by an atomic write since it was opened; what was opened is the
        # previous version, whole, and had no other name: it is read)
        if info.st_nlink > 1:
            raise PlantedLink("/".join(parts), f"is a hard link ({info.st_nlink} names for one file)")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_run_file(run_root: Path, path: str | os.PathLike) -> bytes:
    """The whole file, read as `open_run_file` opens it."""
    with open_run_file(run_root, path) as handle:
        return handle.read()


@dataclass
class Listing:
    """A run folder's entries, links and special files set apart (they are never read)."""

    files: list[str] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def list_run_dir(run_root: Path, path: str | os.PathLike) -> Listing:
    """The regular files and folders of `path` (inside `run_root`), without following a link to
    reach it or in it. A missing folder lists as empty."""
    listing = Listing()
    try:
        folder = _open_dir(run_root, _relative(run_root, path))
    except (FileNotFoundError, NotADirectoryError):
        return listing
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    listing.dirs.append(entry.name)
                elif entry.is_file(follow_symlinks=False):
                    listing.files.append(entry.name)
                else:
                    listing.refused.append(entry.name)
    finally:
        os.close(folder)
    return listing


def planted_links(run_root: Path, path: str | os.PathLike) -> list[str]:
    """Every link (symbolic or hard) and special file in the tree at `path`, relative to the run
    directory: for readers outside this process (TensorBoard), which must not be given a tree
    that holds one. A missing tree holds none."""
    found: list[str] = []
    base = "/".join(_relative(run_root, path))
    try:
        for relative in _walk(run_root, Path(path)):
            found.append(f"{base}/{relative}" if base else relative)
    except PlantedLink as link:
        found.append(link.relative)
    return found


def _walk(run_root: Path, path: Path, prefix: str = "") -> Iterator[str]:
    listing = list_run_dir(run_root, path)
    yield from (f"{prefix}{name}" for name in listing.refused)
    folder = _open_dir(run_root, _relative(run_root, path)) if listing.files else None
    try:
        for name in listing.files:
            assert folder is not None
            try:
                if os.stat(name, dir_fd=folder, follow_symlinks=False).st_nlink != 1:
                    yield f"{prefix}{name}"
            except FileNotFoundError:
                continue
    finally:
        if folder is not None:
            os.close(folder)
    for name in listing.dirs:
        yield from _walk(run_root, path / name, f"{prefix}{name}/")
