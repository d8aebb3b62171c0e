"""A topology file's text: bounded in size, UTF-8, and every failure one line naming the file.

A file that cannot be read as a topology's text (missing, a directory, too large, not UTF-8) is
an `OSError`, like any other file that cannot be read, so every caller that already reports
"cannot read FILE: why" reports these too; only what is in a readable file is a TopologyError.
At most `MAX_DOCUMENT_CHARS` characters' worth of bytes are read, so a huge file (or stream) is
refused without being loaded.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import BinaryIO

from .limits import MAX_DOCUMENT_CHARS

#: UTF-8 needs at most 4 bytes per character.
_MAX_BYTES = 4 * MAX_DOCUMENT_CHARS


class UnreadableTopologyFile(OSError):
    """The file exists but its content is not a topology's text (too large, not UTF-8)."""


def read_topology_text(path: str | os.PathLike[str]) -> str:
    """The text of a topology file, or of standard input for `-`.

    Raises OSError (UnreadableTopologyFile for content that is not UTF-8 text within the size
    limit); its `strerror` says why in words, its `filename` is the path.
    """
    name = os.fspath(path)
    if name == "-":
        return _decode(_read_bounded(sys.stdin.buffer, "standard input"), "standard input")
    with open(name, "rb") as handle:
        return _decode(_read_bounded(handle, name), name)


def _read_bounded(handle: BinaryIO, name: str) -> bytes:
    data = handle.read(_MAX_BYTES + 1)
    if len(data) > _MAX_BYTES:
        raise _unreadable(name, f"larger than the limit of {MAX_DOCUMENT_CHARS:,} characters ({_mib()} MiB)")
    return data


def _decode(data: bytes, name: str) -> str:
    try:
        text = data.decode("utf-8-sig")  # a byte order mark (Windows editors) is not part of the text
    except UnicodeDecodeError as error:
        byte = data[error.start]
        raise _unreadable(
            name, f"not UTF-8 text (byte {byte:#04x} at offset {error.start}); save it as UTF-8"
        ) from None
    if len(text) > MAX_DOCUMENT_CHARS:
        raise _unreadable(name, f"larger than the limit of {MAX_DOCUMENT_CHARS:,} characters ({_mib()} MiB)")
    return text


def _mib() -> str:
    return f"{MAX_DOCUMENT_CHARS / 2**20:g}"


def _unreadable(name: str, why: str) -> UnreadableTopologyFile:
    return UnreadableTopologyFile(errno.EINVAL, why, name)
