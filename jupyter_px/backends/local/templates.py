"""The local backend's warm templates, for the surfaces (`jupyter px warm`, the Jupyter server):
list them with their memory, start one and wait until it is ready, stop them all.

The backend table's row names this module (`warm`); the surfaces reach it through
`jupyter_px.service.warm`. Templates are not runs. Reads never act: `templates()`
only reads state files and asks each running template for its status.
"""

from __future__ import annotations

from typing import Any

from ...runstore import px_home
from . import warm as _warm
from .launcher import clean_environ
from .settings import load_settings
from .spawn_ahead import members

#: Frameworks a template can be started for (None: runs without one).
FRAMEWORKS: tuple[str | None, ...] = tuple(_warm.FRAMEWORK_PRELOAD)


def templates() -> list[dict[str, Any]]:
    """Every template of this warm directory, newest first, running or not (`warm.templates`);
    a spawn-ahead pool's interpreters with their memory and whether each has imported."""
    entries = _warm.templates()
    for entry in entries:
        if entry.get("pool") is not None:
            entry["pool"] = {**entry["pool"], "interpreters": members(entry.get("standby_pid"))}
    return entries


def start(framework: str | None = "pytorch") -> dict[str, Any]:
    """Start the template for `framework` (or keep the one running) and wait until it is ready;
    its state. RuntimeError naming why it cannot start (BackendError: bad settings)."""
    env = {**clean_environ(px_home()), "PYTHONUNBUFFERED": "1"}
    return _warm.start(framework, env, load_settings())


def stop(reason: str = "stopped on request (jupyter px warm stop)") -> list[str]:
    """Stop every running template; the keys of those that were running."""
    return _warm.stop_all(reason)


def directory() -> str:
    return str(_warm.warm_dir())
