"""The monitors that update in the background in this process, so they can all be stopped at once.

A monitor's threads end by themselves when its run or sweep ends; a run that never ends (or a
store that went away) would keep them polling for the life of the kernel. `%unload_ext
jupyter_px` stops them all (the runs go on; only the notebook's updates stop), and so does a test
between one test and the next, so one test's monitor never draws into another's captured output.
"""

from __future__ import annotations

import weakref
from typing import Protocol


class _Updating(Protocol):
    def stop_updates(self) -> None: ...


_LIVE: weakref.WeakSet[_Updating] = weakref.WeakSet()


def started(monitor: _Updating) -> None:
    """`monitor` has started its background updates."""
    _LIVE.add(monitor)


def stop_all() -> int:
    """Stop every monitor's background updates; how many were running."""
    monitors = list(_LIVE)
    _LIVE.clear()
    for monitor in monitors:
        monitor.stop_updates()
    return len(monitors)
