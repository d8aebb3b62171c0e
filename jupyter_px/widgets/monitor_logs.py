"""The run monitor's log views: one tab per replica up to `MAX_LOG_TABS`, else a drop-down.

A tab strip of 256 replicas is unusable (and a widget per replica is what a 256-worker run must
not have), so beyond `MAX_LOG_TABS` a drop-down picks the replica shown in a single log view. Logs
are read incrementally from the last offset, keeping the last `LOG_TAIL_BYTES`
(the run service's `log_follower`), only for the replica on screen.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from ..presentation.monitor import log_html

#: Up to this many replicas, each gets a log tab; above it, a drop-down.
MAX_LOG_TABS = 16


class LogViews:
    """Log tails shown as one tab per replica, or a drop-down and one view for many replicas."""

    def __init__(self, service: Any, run_id: str, replicas: list[tuple[str, int]], labels: list[str] | None = None):
        self.tails = [service.log_follower(run_id, role, index) for role, index in replicas]
        self.keys = labels or [f"{role}-{index}" for role, index in replicas]
        if len(replicas) <= MAX_LOG_TABS:
            self.views = [widgets.HTML(value=log_html(tail.text)) for tail in self.tails]
            self.selector: Any = widgets.Tab(children=self.views, titles=self.keys)
            self.widget: Any = self.selector
        else:
            self.views = [widgets.HTML(value="")]
            self.selector = widgets.Dropdown(
                options=[(k, i) for i, k in enumerate(self.keys)], value=0, description="replica"
            )
            self.widget = widgets.VBox([self.selector, self.views[0]])
        self.selector.observe(lambda _change: self.refresh(), names="selected_index" if self.tabs else "value")

    @property
    def tabs(self) -> bool:
        return isinstance(self.selector, widgets.Tab)

    def selected(self) -> int:
        value = self.selector.selected_index if self.tabs else self.selector.value
        return value or 0

    def select(self, position: int) -> None:
        """Show replica `position`'s log (refreshed through the selector's observer)."""
        if self.tabs:
            self.selector.selected_index = position
        else:
            self.selector.value = position

    def refresh(self, everything: bool = False) -> None:
        indices = range(len(self.tails)) if everything and self.tabs else [self.selected()]
        for i in indices:
            if i >= len(self.tails):
                continue
            tail = self.tails[i]
            tail.poll()
            view = self.views[i] if self.tabs else self.views[0]
            view.value = log_html(tail.text)
