"""Messages between a starter, the template, its standby owner and a zygote: one JSON object per
frame (a 4-byte big-endian length, then UTF-8 JSON), file descriptors passed alongside a frame
with SCM_RIGHTS (`socket.send_fds`). A stream socket, not datagrams: a replica's environment
can be larger than a datagram (a 5,000-replica PX_CLUSTER)."""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Sequence
from typing import Any

_HEADER = struct.Struct("!I")
#: Larger frames are refused: nothing we send comes near (environments are under 32 MiB).
MAX_FRAME = 64 * 1024 * 1024
MAX_FDS = 4


class WireError(OSError):
    """The other end closed the connection, or sent something that is not a frame."""


def send(sock: socket.socket, message: dict[str, Any], fds: Sequence[int] = ()) -> None:
    data = json.dumps(message).encode()
    frame = _HEADER.pack(len(data)) + data
    if fds:
        sent = socket.send_fds(sock, [frame], list(fds))
        if sent < len(frame):
            sock.sendall(frame[sent:])
    else:
        sock.sendall(frame)


def _exactly(sock: socket.socket, size: int, head: bytes = b"") -> bytes:
    chunks, have = [head], len(head)
    while have < size:
        chunk = sock.recv(min(size - have, 1 << 20))
        if not chunk:
            raise WireError("the connection closed in the middle of a message")
        chunks.append(chunk)
        have += len(chunk)
    return b"".join(chunks)


def receive(sock: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """The next message and the descriptors that came with it; WireError at end of stream."""
    data, fds, _flags, _addr = socket.recv_fds(sock, _HEADER.size, MAX_FDS)
    if not data:
        for fd in fds:
            _close(fd)
        raise WireError("the connection closed")
    header = _exactly(sock, _HEADER.size, data)
    (size,) = _HEADER.unpack(header)
    if size > MAX_FRAME:
        raise WireError(f"a frame of {size} bytes is larger than {MAX_FRAME}")
    try:
        message = json.loads(_exactly(sock, size))
    except ValueError as error:
        raise WireError(f"not a JSON message: {error}") from None
    if not isinstance(message, dict):
        raise WireError("a message must be a JSON object")
    return message, list(fds)


def _close(fd: int) -> None:
    import os

    try:
        os.close(fd)
    except OSError:
        pass
