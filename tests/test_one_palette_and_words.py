"""One color per state, one color per replica, one name for TensorFlow's chief and one phrasing
for resources, on every surface of the notebook and the CLI (`jupyter_px.presentation.colors`,
`labels`, `topology.ranges`; the sidebar's stylesheet holds the same hex values)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from px_cli import ROOT, px, px_environ

from jupyter_px.presentation import colors
from jupyter_px.presentation.colors import OBJECTIVE_SCALE, REPLICA_COLORS, STATE_COLORS
from jupyter_px.runstore import RunState, RunStore

PYTORCH = {
    "framework": "pytorch",
    "environment": {
        "resources": {"cpu": {"requests": 0.5, "limits": 1}},
        "replicas": {"n_workers": 2, "default_worker": {"resources": {"cpu": {"requests": 0.5, "limits": 1}}}},
    },
}
TF = {"framework": "tensorflow", "environment": {"replicas": {"n_workers": 1, "n_ps": 1}}}


def _monitor(run_id):
    from jupyter_px.api import Run
    from jupyter_px.widgets.run_monitor import RunMonitor

    return RunMonitor(Run(run_id), autostart=False)


def _stop(run_id: str) -> None:
    store = RunStore()
    status = store.status(run_id)
    status.state = RunState.STOPPED
    status.finished_at = status.started_at + 5
    store.write_status(status)


def test_stopped_has_one_color_in_the_monitor_and_its_final_view(synthetic_run):
    synthetic_run("pal-1", PYTORCH, metric_points=5)
    monitor = _monitor("pal-1")
    assert monitor.replica_bar.style.bar_color == STATE_COLORS["Running"]
    _stop("pal-1")
    monitor.refresh()
    stopped = STATE_COLORS["Stopped"]
    assert monitor.replica_bar.style.bar_color == stopped and monitor.replica_bar.bar_style == ""
    assert f"color:{stopped}" in monitor.header.value  # the state badge
    final = monitor.final_view()
    from jupyter_px.presentation.monitor import final_html

    page = final_html(final)
    assert f"background:{stopped}" in page  # the final view's bar
    # no other state's color and none of ipywidgets' bar styles stands for Stopped anywhere
    others = {c for state, c in STATE_COLORS.items() if state != "Stopped"}
    assert not any(f"background:{c}" in page for c in others)


def test_replicas_have_the_same_colors_in_every_plot(synthetic_run):
    from jupyter_px.widgets.plots import LivePlot, static_figure

    synthetic_run("pal-2", PYTORCH, metric_points=5)
    monitor = _monitor("pal-2")
    data = monitor.metrics_reader.data
    replicas = sorted(data)
    plot = LivePlot()
    plot.update(data, data.keys())
    live = {trace.name: trace.line.color for trace in plot.figure.data}
    assert live == {replica: REPLICA_COLORS[i] for i, replica in enumerate(replicas)}
    static = {trace.name: trace.line.color for trace in static_figure(data, ["loss"]).data}
    assert static == live
    # The sidebar's plots take the same palette from the stylesheet (--px-replica-N).
    css = (Path(__file__).resolve().parents[1] / "style" / "base.css").read_text()
    assert re.findall(r"--px-replica-\d+: (#[0-9a-f]{6})", css) == [c.lower() for c in REPLICA_COLORS]


def test_resources_read_the_same_in_the_notebook_and_the_cli(synthetic_run, tmp_path):
    from jupyter_px.presentation.text import resources_text
    from jupyter_px.topology import parse_topology, summary_html, summary_text

    topology = parse_topology(PYTORCH)
    assert {resources_text(spec.resources) for spec in topology.replicas()} == {"cpu 0.5\u20131"}
    assert "0.5\u20131" in summary_text(topology) and "0.5\u20131" in summary_html(topology)
    synthetic_run("pal-3", PYTORCH)
    table = _monitor("pal-3").table.value
    assert table.count("cpu 0.5\u20131") == 3  # master and both workers
    path = tmp_path / "topology.yaml"
    import yaml

    path.write_text(yaml.safe_dump(PYTORCH))
    shown = px("validate", str(path), timeout=120, readable=False)
    assert shown.returncode == 0, shown.stderr
    assert "0.5\u20131" in shown.stdout and " / " not in shown.stdout


def test_tensorflow_chief_is_called_chief_in_status_outputs(synthetic_run, px_home):
    from jupyter_px.presentation.text import replica_states, status_rows

    synthetic_run("pal-4", TF)
    status = RunStore().status("pal-4")
    assert [row[0] for row in status_rows(status, tf_chief=True)] == ["chief", "worker-0", "ps-0"]
    assert replica_states(status, tf_chief=True).startswith("chief Running")
    shown = px("status", "pal-4", env=px_environ(PX_HOME=str(px_home)), timeout=120, readable=False)
    assert shown.returncode == 0, shown.stderr
    assert re.search(r"^chief\s+Running", shown.stdout, re.MULTILINE) and "master-0" not in shown.stdout
    assert "\x1b[" not in shown.stdout  # not a terminal: no color codes


def test_the_cli_colors_a_state_as_the_notebook_does():
    from jupyter_px.presentation.text import state_painter, table

    painted = table(("RUN", "STATE"), [("a", "Stopped"), ("b", "Succeeded")], paint=state_painter(1, True))
    red, green, blue = (int(STATE_COLORS["Stopped"][i : i + 2], 16) for i in (1, 3, 5))
    assert f"\x1b[38;2;{red};{green};{blue}mStopped\x1b[0m" in painted
    plain = table(("RUN", "STATE"), [("a", "Stopped"), ("b", "Succeeded")])
    assert re.sub(r"\x1b\[[0-9;]*m", "", painted) == plain  # color never shifts a column
    assert state_painter(1, False) is None
    assert not colors.use_color(open(os.devnull, "w"))  # noqa: SIM115 (not a terminal)


def _contrast(color: str, ground: str) -> float:
    def luminance(hex_color: str) -> float:
        channels = [int(hex_color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted((luminance(color), luminance(ground)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_every_state_color_reads_in_light_and_dark():
    for state, color in STATE_COLORS.items():
        for ground in ("#FFFFFF", "#111111"):  # JupyterLab Light's and Dark's backgrounds
            assert _contrast(color, ground) >= 3.0, (state, color, ground)
    assert len(set(STATE_COLORS.values())) == len(STATE_COLORS)  # one color, one state


def test_the_sidebar_stylesheet_holds_the_same_colors():
    """style/base.css's --px-state-* and --px-replica-* variables are the notebook's colors, so a
    Stopped run is one color and replica 3 one line color in the notebook, the CLI and the sidebar."""
    css = (ROOT / "style" / "base.css").read_text()
    declared = {name: value.lower() for name, value in re.findall(r"--px-([a-z]+-[a-z0-9]+):\s*(#[0-9a-fA-F]+);", css)}
    expected = {f"state-{state.lower()}": color.lower() for state, color in STATE_COLORS.items()}
    expected |= {f"replica-{i}": color.lower() for i, color in enumerate(REPLICA_COLORS)}
    expected |= {f"objective-{i}": color.lower() for i, color in enumerate(OBJECTIVE_SCALE)}
    assert declared == expected
