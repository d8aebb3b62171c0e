"""What every plotly figure the product makes must carry: nothing that sends a user's training
data off the machine (plotly.js 4's "Share chart..." is on unless told otherwise)."""

from __future__ import annotations

from typing import Any


def assert_private(config: dict[str, Any]) -> None:
    """`config` is a figure's plotly.js config: no cloud button, no Chart Studio, no link."""
    assert config.get("showSendToCloud") is False, config
    assert config.get("showEditInChartStudio") is False, config
    assert config.get("showLink") is False, config
    assert not config.get("plotlyServerURL"), config
    assert {"sendChartToCloud", "editInChartStudio"} <= set(config.get("modeBarButtonsToRemove", [])), config


def assert_private_html(text: str) -> None:
    """The exported HTML's `Plotly.newPlot(..., config)` call carries the same flags."""
    for flag in ("showSendToCloud", "showEditInChartStudio", "showLink"):
        assert f'"{flag}": false' in text, flag
    assert '"sendChartToCloud"' in text and "plotlyServerURL" not in text
