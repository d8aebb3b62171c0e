"""Free ports on 127.0.0.1 that no two concurrent runs can both get.

Two races matter:

* Between two of our runs: each supervisor asks the kernel for a free port (bind to port 0),
  then takes a byte-range lock at offset `port` in `$PX_HOME/ports.lock` (fcntl record lock).
  The lock lives as long as the supervisor that holds it, and the kernel drops it when that
  process dies (even by SIGKILL), so there is no stale state to clean up. A port whose byte is
  locked by another live supervisor is skipped.
* Between reservation and the replica binding the port: the reserving socket stays bound (not
  listening) until just before the replica that owns the address is started, so the kernel
  will not hand the port to anyone else meanwhile. The window left is the replica's start-up
  (the framework binds the port itself, so we cannot pass it a bound socket); inside our own
  runs the lock still covers it, including for restarts that bind the same port again.
"""

from __future__ import annotations

import fcntl
import os
import socket
from pathlib import Path

HOST = "127.0.0.1"

#: Give up after this many kernel-offered ports that another run had locked (failures only: a
#: run may reserve any number of ports).
MAX_LOCKED_TRIES = 200


class PortReservation:
    """Ports held for one run: `take(n)` reserves, `release_socket(port)` before the owner starts."""

    def __init__(self, lock_path: Path):
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        self._sockets: dict[int, socket.socket] = {}
        self.ports: list[int] = []

    def take(self, count: int) -> list[int]:
        got: list[int] = []
        failures = 0
        while len(got) < count:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind((HOST, 0))
                port = sock.getsockname()[1]
                fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, port)
            except OSError as error:
                sock.close()
                failures += 1
                if failures > MAX_LOCKED_TRIES:
                    raise OSError(
                        f"could not reserve {count} free ports on {HOST} ({len(got)} found; last error: {error})"
                    ) from None
                continue
            self._sockets[port] = sock
            got.append(port)
        self.ports.extend(got)
        return got

    def release_socket(self, port: int) -> None:
        """Unbind the placeholder socket so the replica can bind the port (the lock stays)."""
        sock = self._sockets.pop(port, None)
        if sock is not None:
            sock.close()

    def close(self) -> None:
        """Release everything (sockets and locks)."""
        for port in list(self._sockets):
            self.release_socket(port)
        if self._fd >= 0:
            os.close(self._fd)  # closing the descriptor drops every record lock of this process
            self._fd = -1
