"""Ports for the servers the tests start: Jupyter servers, sshd hosts, Slurm's daemons, a torch
rendezvous.

A port found by binding port 0 comes from the kernel's ephemeral range, which every outgoing
connection and every other port-0 bind on the machine draws from too. Between the probe's close
and the server's bind another process can take it: in CI a JupyterLab once failed with "The port
42033 is already in use". The local backend's replicas draw from just below that range
(`jupyter_px/processes/ports.py`), for the same reason. These ports come from below both,
where neither the kernel nor a run hands out a port by itself, from a slice of their own for each
pytest-xdist worker, taken in turn: two tests of one run never pick the same port. Each is still
probed, for whatever else binds there.
"""

from __future__ import annotations

import itertools
import os
import random
import socket

from jupyter_px.processes import ports

#: Below the ports that stay clear of well-known services (Galata's JupyterLab uses 8917).
LOWEST = 9000


def _below_the_runs() -> int:
    """The first port the local backend's replicas or the kernel may hand out."""
    ephemeral = ports.ephemeral_range()
    runs = ports.pool(ephemeral)
    if runs is not None:
        return runs.start
    return ephemeral[0] if ephemeral else 32768  # Linux's default


def _slice() -> range:
    """This process's ports: its xdist worker's share of [LOWEST, the runs' and kernel's ports)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    index = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    width = (_below_the_runs() - LOWEST) // max(workers, 1)
    start = LOWEST + index * width
    return range(start, start + width)


_PORTS = _slice()
# A random start: two test runs side by side (a developer's, beside CI) rarely meet.
_NEXT = itertools.count(random.randrange(len(_PORTS)))


def free_port() -> int:
    """A port free on 127.0.0.1 now, that no other test of this run is given."""
    for _ in range(len(_PORTS)):
        port = _PORTS[next(_NEXT) % len(_PORTS)]
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise OSError(f"no free port in {_PORTS.start}-{_PORTS.stop - 1} on 127.0.0.1")


def free_ports(count: int) -> list[int]:
    """`count` distinct free ports."""
    return [free_port() for _ in range(count)]
