"""Free ports that nothing else on this machine takes before a replica binds them: the local
backend's (on 127.0.0.1), a Slurm task's and an SSH session's (on every address of their node).

A replica's framework binds its port itself (torch's TCPStore, TensorFlow's gRPC server), so we
cannot hand it a bound socket: between our placeholder socket's release and the replica's bind
(its `import torch` among others) there is a window. Three kinds of process could take the port
in it, and each is kept out:

* **The kernel, for anybody's `bind(0)` or outgoing connection.** It hands those out from
  `net.ipv4.ip_local_port_range` (32768-60999 by default) and nowhere else, and a machine busy
  with training is busy with them (gloo's pairs listen on `bind(0)` ports, every HTTP client
  connects from one). So ports come from the 16,384 ports just below that range, where only a
  program asking for that port by number can land, as torchrun does with 29500. Picking ports
  inside the range, as `bind(0)` does, lost one run in a few hundred on a loaded machine
  (`DistNetworkError: The server socket has failed to listen`).
* **Another of this user's runs, from any store or backend.** Each holder takes a byte-range
  lock at offset `port` in one lock file per user and machine (`<tmp>/jupyter-px-<uid>/ports.lock`,
  in a folder only the user can write), so two stores (two Jupyter servers, a CLI run beside a
  notebook's) and a Slurm job's tasks on one node never pick the same port. The lock lives as
  long as the process that holds it (a supervisor, a task's entry), and the kernel drops it when
  that process dies (even by SIGKILL): no stale state. It also covers restarts, which bind the
  same port again.
* **Anything before the release:** the placeholder socket stays bound (not listening) until
  just before the replica that owns the address starts.

Where the ephemeral range leaves less than `MIN_POOL` ports below it, ports come from the
kernel's `bind(0)`; the lock still keeps our runs apart. Standard library only: a Slurm task's
entry imports it without the package's models.
"""

from __future__ import annotations

import fcntl
import os
import random
import socket
import tempfile
from pathlib import Path
from typing import Literal

from .private_folder import private_folder

HOST = "127.0.0.1"

#: Give up after this many candidate ports that were bound or locked (failures only: a run may
#: reserve any number of ports).
MAX_TAKEN_TRIES = 200

#: How many ports below the kernel's ephemeral range we draw from, and the fewest worth using.
POOL_SIZE = 16_384
MIN_POOL = 1_024
#: Below this the ports are the well-known and registered services'.
LOWEST = 10_000

_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def lock_path() -> Path:
    """This user's one port lock on this machine: every store's runs and this node's Slurm and
    SSH replicas share it."""
    return Path(tempfile.gettempdir()) / f"jupyter-px-{os.getuid()}" / "ports.lock"


def ephemeral_range(path: Path = _EPHEMERAL_RANGE) -> tuple[int, int] | None:
    """The kernel's (first, last) port for `bind(0)` and outgoing connections, where it says."""
    try:
        first, last = (int(word) for word in path.read_text().split())
    except (OSError, ValueError):
        return None
    return first, last


def pool(ephemeral: tuple[int, int] | None) -> range | None:
    """The ports we draw from: those just below the ephemeral range, or None to ask the kernel."""
    if ephemeral is None:
        return None
    below = range(max(LOWEST, ephemeral[0] - POOL_SIZE), ephemeral[0])
    return below if len(below) >= MIN_POOL else None


def pool_size() -> int:
    """How many ports this machine's runs draw from (the capacity check's bound)."""
    ephemeral = ephemeral_range()
    below = pool(ephemeral)
    if below is not None:
        return len(below)
    return ephemeral[1] - ephemeral[0] + 1 if ephemeral else POOL_SIZE


def _private_lock_file(path: Path) -> int:
    """Open the lock file in a folder that is this user's alone (nobody else can plant it)."""
    unsafe = private_folder(str(path.parent))
    if unsafe:
        raise PermissionError(f"the port lock's folder {unsafe}")
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)


class PortReservation:
    """Ports held for one run: `take(n)` reserves, `release_socket(port)` before the owner starts."""

    def __init__(
        self,
        lock: Path | None = None,
        ports: range | None | Literal["below-ephemeral"] = "below-ephemeral",
        host: str = HOST,
    ):
        """`ports`: where to draw from, None to let the kernel pick (`bind(0)`); `host`: the
        address to bind, "" for every address (a replica that peers on other nodes reach)."""
        self.host = host
        self._fd = _private_lock_file(lock or lock_path())
        self._pool = pool(ephemeral_range()) if ports == "below-ephemeral" else ports
        self._sockets: dict[int, socket.socket] = {}
        self.ports: list[int] = []

    def _candidate(self) -> int:
        """A port of the pool at random (one already taken fails its bind or lock), or 0: the kernel picks."""
        return random.choice(self._pool) if self._pool is not None else 0

    def take(self, count: int) -> list[int]:
        got: list[int] = []
        failures = 0
        while len(got) < count:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind((self.host, self._candidate()))
                port = sock.getsockname()[1]
                fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, port)
            except OSError as error:
                sock.close()
                failures += 1
                if failures > MAX_TAKEN_TRIES:
                    raise OSError(
                        f"could not reserve {count} free ports on {self.host or 'any address'} "
                        f"({len(got)} found; last error: {error})"
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
