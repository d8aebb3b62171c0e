"""How the supervisor sleeps: until a signal (SIGCHLD, SIGTERM) or a timeout, never busy.

Signals are delivered through `signal.set_wakeup_fd` onto a non-blocking pipe, so a child's exit
or a stop request interrupts the wait at once, and the handlers themselves do nothing but flag.
"""

from __future__ import annotations

import os
import select
import signal
import types
from collections.abc import Callable


class SignalWakeup:
    """The supervisor's signal handling and its one blocking call (`wait`)."""

    def __init__(self) -> None:
        self._read_fd: int | None = None

    def install(self, on_sigterm: Callable[[int, types.FrameType | None], None]) -> None:
        """Route SIGCHLD and SIGTERM to the wakeup pipe; ignore SIGINT and SIGHUP (the terminal
        or kernel that started the run must not end it)."""
        # A caller may have blocked signals (masks are inherited through exec); we need these.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD, signal.SIGTERM})
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        self._read_fd = read_fd
        signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        signal.signal(signal.SIGTERM, on_sigterm)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # the wakeup fd does the work
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    def wait(self, timeout: float) -> None:
        """Return after `timeout` seconds, or sooner when a signal arrived (drained here)."""
        assert self._read_fd is not None
        readable, _, _ = select.select([self._read_fd], [], [], timeout)
        if readable:
            try:
                while os.read(self._read_fd, 4096):
                    pass
            except BlockingIOError:
                pass
