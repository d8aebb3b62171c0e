"""What `wait` means for a run and for a sweep alike: an explicit keeper called until what it
keeps has finished."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

#: A status with a state that says whether it finished (a run's, a sweep's).
_Finishing = TypeVar("_Finishing", bound=Any)


def keep_until_finished(keep: Callable[[], _Finishing], what: str, timeout: float | None, poll: float) -> _Finishing:
    """Call `keep` (an explicit keeper's step: it may act) until the status it returns is
    finished, every `poll` seconds; TimeoutError naming `what` after `timeout` seconds (the run
    or sweep goes on)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        status = keep()
        if status.state.finished:
            return status
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"{what} still {status.state.value} after {timeout} s")
        time.sleep(poll)
