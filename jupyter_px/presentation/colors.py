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


#: The objective's color scale (parallel coordinates, contours), from the worse end to the better:
#: mid-tones of Viridis's hues, each at least 3:1 against JupyterLab Light's white and Dark's
#: near-black. Viridis itself ends in a near-black purple (1.2:1 on Dark: the worst trial's line
#: vanished) and a pale yellow (1.3:1 on white: the best one's did on Light).
OBJECTIVE_SCALE: tuple[str, ...] = ("#8F63E0", "#4C7BE0", "#1496A8", "#25A05A", "#B58A00")


def objective_colorscale() -> list[list[float | str]]:
    """`OBJECTIVE_SCALE` as plotly's colorscale (low values at the first stop; `reversescale`
    puts the better end where the objective wants it, as with a named scale)."""
    last = len(OBJECTIVE_SCALE) - 1
    return [[i / last, color] for i, color in enumerate(OBJECTIVE_SCALE)]


def state_color(state: str) -> str:
    return STATE_COLORS.get(state, UNKNOWN_STATE_COLOR)


def replica_color(position: int) -> str:
    """The color of the `position`-th replica of a plot (in the plot's replica order)."""
    return REPLICA_COLORS[position % len(REPLICA_COLORS)]


def run_color_slots(run_ids: list[str], n: int = len(REPLICA_COLORS)) -> dict[str, int]:
    """Each run's color slot among `n`, the same for a run in every comparison: a slot from a
    hash of its id (djb2 with xor over its UTF-16 code units), so a run keeps its color from
    one comparison to the next and in the notebook's figure as in the sidebar's panel; where two
    runs land on one slot, the one whose id sorts later takes the next free one. The sidebar's
    `runColorSlots` (labextension/src/panels/compareLayout.ts) is the same rule, step by step.
    """
    slots: dict[str, int] = {}
    taken: set[int] = set()
    for run_id in sorted(set(run_ids), key=_utf16_units):
        units = _utf16_units(run_id)
        h = 5381
        for unit in units:
            h = ((h * 33) & 0xFFFFFFFF) ^ unit
        slot = h % n
        while slot in taken and len(taken) < n:
            slot = (slot + 1) % n
        taken.add(slot)
        slots[run_id] = slot
    return slots


def _utf16_units(text: str) -> list[int]:
    """The UTF-16 code units JavaScript's `charCodeAt` and its string order read."""
    data = text.encode("utf-16-le")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


def run_colors(run_ids: list[str]) -> dict[str, str]:
    """Each run's own color in a comparison (`run_color_slots` over the replica palette)."""
    return {run_id: REPLICA_COLORS[slot] for run_id, slot in run_color_slots(run_ids).items()}


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
