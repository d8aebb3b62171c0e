"""What tracking tells the user about their metrics: stderr lines and one-time warnings.

Stderr is the replica's log, so what happened to the user's metrics (a full disk, dropped points)
is seen even where warnings are filtered; the "not inside a run" case is a warning, once.
"""

from __future__ import annotations

import sys
import warnings

_warned: set[str] = set()


def say(message: str) -> None:
    """A line on stderr (the replica's log): what happened to the user's metrics must be seen
    even where warnings are filtered."""
    try:
        sys.stderr.write(f"jupyter_px.tracking: {message}\n")
        sys.stderr.flush()
    except Exception:
        pass


def say_once(key: str, message: str) -> None:
    """`say`, the first time for `key` in this process."""
    if key not in _warned:
        _warned.add(key)
        say(message)


def warn_once(key: str, message: str) -> None:
    """A RuntimeWarning pointing at the caller of the public function, once per `key`."""
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def warn_outside_run() -> None:
    """Outside a run every function works; this says, once, that nothing is recorded."""
    warn_once(
        "outside-run",
        "jupyter_px.tracking: not inside a jupyter-px run (PX_RUN_ID is not set); metrics and "
        "params are checked but not recorded, and paths point to a temporary directory",
    )
