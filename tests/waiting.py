"""The suite's one way to wait for something: poll a predicate until it holds or a deadline passes.

Every test that waits on a process, a cluster or a server waits through here (the Kubernetes,
Slurm and local helpers re-export it), so a timeout always reads the same and names what was
awaited. The deadlines are failure detectors on a shared two-core machine, never speed claims.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: How long anything is waited for unless a test says otherwise: generous, the machine is shared.
DEADLINE_S = 180.0


def wait_for(predicate: Callable[[], T], what: str = "condition", timeout: float = DEADLINE_S, poll: float = 0.05) -> T:
    """The predicate's first true value, polled every `poll` s; AssertionError naming `what`
    after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(poll)


async def until(predicate: Callable[[], Any], what: str = "condition", timeout: float = DEADLINE_S) -> Any:
    """`wait_for` inside an event loop (a Jupyter server's test): the predicate runs in a thread,
    so the loop, and the server on it, keeps serving while it is polled."""
    deadline = time.monotonic() + timeout
    while True:
        value = await asyncio.to_thread(predicate)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.05)
