"""Notebook widgets: the topology form and the live run monitor (ipywidgets 8).

Imported lazily by `jupyter_px` so the replica runner never loads ipywidgets or plotly.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TopologyForm", "RunMonitor"]


def __getattr__(name: str) -> Any:
    if name == "TopologyForm":
        from .topology_form import TopologyForm

        return TopologyForm
    if name == "RunMonitor":
        from .run_monitor import RunMonitor

        return RunMonitor
    raise AttributeError(f"module 'jupyter_px.widgets' has no attribute {name!r}")
