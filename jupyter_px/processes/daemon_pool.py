"""A thread pool of daemon threads: work nobody waits for any more never holds up an exit.

`concurrent.futures.ThreadPoolExecutor` joins every worker at interpreter exit, so a process
whose worker is blocked in a call that does not return (a request to an API server that hangs)
cannot exit until that call gives up. The Jupyter server's request pools and the parallel
creates of a Kubernetes submit use this pool instead: what such a thread was doing when the
process exits is work its caller has stopped waiting for.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Executor, Future
from typing import Any


class DaemonThreadPool(Executor):
    """At most `size` daemon threads running what is submitted, started as work arrives."""

    def __init__(self, size: int, name: str):
        self.size, self.name = size, name
        self._work: queue.SimpleQueue[tuple[Future, Any] | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self.name}: the pool is shut down")
            self._work.put((future, lambda: fn(*args, **kwargs)))
            if self._idle == 0 and len(self._threads) < self.size:
                thread = threading.Thread(target=self._serve, name=f"{self.name}-{len(self._threads)}", daemon=True)
                self._threads.append(thread)
                thread.start()
            else:
                self._idle -= 1
        return future

    def _serve(self) -> None:
        while True:
            item = self._work.get()
            if item is None:
                return
            future, call = item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(call())
                except BaseException as error:
                    future.set_exception(error)
            with self._lock:
                self._idle += 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """No new work; queued work cancelled when asked. Work in progress is never waited for
        at interpreter exit (daemon threads); `wait` waits for it now."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        while cancel_futures:
            try:
                item = self._work.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[0].cancel()
        for _ in threads:
            self._work.put(None)
        if wait:
            for thread in threads:
                thread.join()
