"""The warm templates (`jupyter px warm`, the Jupyter server's px/api/warm): list them with their
memory, start one and wait until it is ready, stop them all.

Whose templates these are is the backend table's answer (the row with `warm`, the local
backend's today): this module asks the row and forwards, so no surface imports a backend.
"""

from __future__ import annotations

import importlib
from typing import Any

from .. import backend_table

#: The module of the (one) backend whose row keeps warm templates.
_module: Any = importlib.import_module(next(str(e.warm) for e in backend_table.BACKENDS if e.warm))

#: Frameworks a template can be started for (None: runs without one).
FRAMEWORKS: tuple[str | None, ...] = _module.FRAMEWORKS


def templates() -> list[dict[str, Any]]:
    """Every template of this warm directory, newest first, running or not."""
    return list(_module.templates())


def start(framework: str | None = "pytorch") -> dict[str, Any]:
    """Start the template for `framework` (or keep the one running) and wait until it is ready;
    its state. RuntimeError naming why it cannot start (BackendError: bad settings)."""
    return dict(_module.start(framework))


def stop(reason: str = "stopped on request (jupyter px warm stop)") -> list[str]:
    """Stop every running template; the keys of those that were running."""
    return list(_module.stop(reason))


def directory() -> str:
    return str(_module.directory())
