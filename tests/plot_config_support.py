"""What every plotly figure the product makes must carry: nothing that sends a user's training
data off the machine (plotly.js 4's "Share chart..." is on unless told otherwise)."""

from __future__ import annotations

from typing import Any


def assert_private(config: dict[str, Any]) -> None:
    """`config` is a figure's plotly.js config: no cloud button, no plotly server to post to."""
    assert config.get("showSendToCloud") is False, config
    assert not config.get("plotlyServerURL"), config
    assert "sendChartToCloud" in config.get("modeBarButtonsToRemove", []), config


def assert_private_html(text: str) -> None:
    """The exported HTML's `Plotly.newPlot(..., config)` call carries the same flags."""
    assert '"showSendToCloud": false' in text and '"sendChartToCloud"' in text
    assert "plotlyServerURL" not in text
