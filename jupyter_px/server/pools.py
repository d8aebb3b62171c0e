"""The server's thread pools for blocking work: one bounded pool per kind, of daemon threads.

Why bounded, and per kind: `asyncio.to_thread` shares the loop's one default pool (min(32,
cores + 4) threads), and six submits blocked on a hung Kubernetes API server once left no thread
for `GET runs`. Here a submit can only wait behind other submits and stops to the same backend
family.

Why daemon threads (`jupyter_px.processes.daemon_pool`): a Jupyter server given SIGTERM while six submits
hung on an API server stayed up until each request timed out. The work a pool's thread does at
shutdown is a request the client has stopped waiting for: the server must not wait for it
either. (A submit cut short there leaves at most a run recorded but never started, which every
reader reports as such.)
"""

from __future__ import annotations

import asyncio
from typing import Any

from .. import backend_table
from ..processes.daemon_pool import DaemonThreadPool

#: Threads per kind of blocking work: reads (the store), submits and stops per backend family
#: (each row of `backend_table` names its pool and size: a local one starts processes; a
#: Kubernetes one waits on the API server; a Slurm one on slurmctld), TensorBoard starts. A kind
#: whose threads are all busy queues its own calls only.
POOL_THREADS: dict[str, int] = {"read": 8, **backend_table.pools(), "tensorboard": 2}

#: A pool's name: "read", "tensorboard" or a backend row's `pool`.
Kind = str


def change_kind(backend: str) -> Kind:
    """The pool of a submit or stop on `backend` (any of its names): its row's. An unknown name
    gets the default backend's pool, where the submit is refused at once."""
    try:
        return backend_table.entry(backend).pool
    except backend_table.UnknownBackend:
        return backend_table.entry(None).pool


#: Work that starts or stops processes on this machine (a sweep's controller, the warm
#: templates): the default backend's pool.
HERE: Kind = change_kind(backend_table.DEFAULT_BACKEND)


class Pools:
    """One `DaemonThreadPool` per kind of blocking work, for the server's life."""

    def __init__(self, threads: dict[str, int] | None = None):
        sizes = {**POOL_THREADS, **(threads or {})}
        self.executors = {kind: DaemonThreadPool(size, f"jupyter-px-{kind}") for kind, size in sizes.items()}
        self._waiting: set[asyncio.Future] = set()

    async def run(self, kind: Kind, function: Any, *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self.executors[kind], lambda: function(*args, **kwargs))
        self._waiting.add(future)
        future.add_done_callback(self._waiting.discard)
        return await future

    def shutdown(self) -> None:
        """Refuse new work and drop what waits. The requests awaiting work in progress end now
        (cancelled): a request left pending keeps what it started pending too (the anyio worker
        threads of jupyter_server's contents manager, joined at exit), and the server would not
        exit until the work, a call to a hung API server, gave up. Call it on the event loop."""
        for executor in self.executors.values():
            executor.shutdown(wait=False, cancel_futures=True)
        for future in list(self._waiting):
            future.cancel()
