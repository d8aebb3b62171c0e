"""jupyter-px: distributed training from a notebook.

    %load_ext jupyter_px                      # the %%px_topology / %%px_distributed magics
    run = jupyter_px.submit("train.py", "topology.yaml"); run.wait()
    jupyter_px.TopologyForm()                 # build a topology with widgets

Everything is imported on first use (PEP 562 `__getattr__`): every replica's runner imports this
package, and `import jupyter_px` must not pull in IPython, ipywidgets, pydantic or plotly there.
"""

from __future__ import annotations

from typing import Any

from ._version import __version__
from .lazy import lazy_attributes

#: Public name -> module that defines it (imported when the name is first used).
_LAZY = {
    "submit": "jupyter_px.api",
    "runs": "jupyter_px.api",
    "Run": "jupyter_px.api",
    "RunFailed": "jupyter_px.api",
    "PushError": "jupyter_px.api",
    "sweep": "jupyter_px.sweeps.api",
    "Sweep": "jupyter_px.sweeps.api",
    "TopologyForm": "jupyter_px.widgets.topology_form",
    "RunMonitor": "jupyter_px.widgets.run_monitor",
    "compare": "jupyter_px.compare",
}

__all__ = [
    "__version__",
    "load_ipython_extension",
    "unload_ipython_extension",
    "_jupyter_server_extension_points",
    *_LAZY,
]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext jupyter_px`: register the magics."""
    from .magics import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .magics import unload_ipython_extension as unload

    unload(ipython)


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """jupyter_server finds the server extension (`jupyter_px.server.JupyterPxApp`) here; imported
    only when a server asks, so `import jupyter_px` stays light."""
    from .server import _jupyter_server_extension_points as points

    return points()


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """JupyterLab's extension tools (`labextension develop`) find the built sidebar here."""
    return [{"src": "labextension", "dest": "jupyter-px"}]
