"""The colors every surface uses: one per run/replica state, one per replica in plots.

Defined once here; the notebook's HTML, widgets and plots take them from here, the CLI colors a
state word with the same values (`ansi_state`), and the JupyterLab sidebar's stylesheet holds the
same hex values (its `--px-state-*` and `--px-replica-*` variables; a test keeps them equal).

State colors are mid-tones that read on JupyterLab Light's white and JupyterLab Dark's
near-black alike (each at least 3:1 against both, the contrast WCAG asks of graphics), so no theme
needs its own set. Replica colors are Tableau 10, a palette made to tell ten lines apart on light
and dark grounds (the lightest ones, as lines, stay visible on white but under 3:1).
"""

from __future__ import annotations

#: Run and replica states (`RunState`, `ReplicaState` values).
STATE_COLORS: dict[str, str] = {
    "Pending": "#B8860B",  # amber: waiting
    "Running": "#3B82F6",  # blue
    "Restarting": "#E8710A",  # orange: running again after a failure
    "Succeeded": "#22A559",  # green
    "Failed": "#E5484D",  # red
    "Stopped": "#8E7CC3",  # grey-purple: ended on request, not a failure
    "Lost": "#A0785A",  # brown: its owner is gone, its end unknown
}
#: Anything else (a state from a newer version).
UNKNOWN_STATE_COLOR = "#8C8C8C"

#: One color per replica, in order, in every metric plot (the notebook's plotly plot and SVG,
#: the sidebar's metrics panel): Tableau 10, made to be told apart on light and dark grounds.
REPLICA_COLORS: tuple[str, ...] = (
    "#4E79A7", "#F28E2B", "#E15759", "#76B7B2", "#59A14F", "#EDC948", "#B07AA1", "#FF9DA7", "#9C755F", "#BAB0AC",
)  # fmt: skip


def state_color(state: str) -> str:
    return STATE_COLORS.get(state, UNKNOWN_STATE_COLOR)


def replica_color(position: int) -> str:
    """The color of the `position`-th replica of a plot (in the plot's replica order)."""
    return REPLICA_COLORS[position % len(REPLICA_COLORS)]


def ansi_state(state: str, text: str | None = None) -> str:
    """`text` (default: the state) in the state's color for a terminal (24-bit ANSI); the caller
    decides whether the terminal wants color (`use_color`)."""
    red, green, blue = (int(state_color(state)[i : i + 2], 16) for i in (1, 3, 5))
    return f"\x1b[38;2;{red};{green};{blue}m{text if text is not None else state}\x1b[0m"


def use_color(stream: object) -> bool:
    """Color for a terminal that is one, unless $NO_COLOR asks for none (no-color.org)."""
    import os

    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
