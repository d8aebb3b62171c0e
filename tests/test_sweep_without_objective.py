"""A sweep without a declared objective is still a sweep to look at: its view plots every metric
its trials logged, a line per trial, and says once how to declare an objective (it showed an
empty chart of invented axes, "-" in every value cell and "the sweep has no objective" five
times). A real 3-trial grid sweep on the local backend."""

from __future__ import annotations

import pytest

import jupyter_px
from jupyter_px.sweeps.store import SweepState
from jupyter_px.sweeps.view_model import NO_OBJECTIVE

pytestmark = pytest.mark.jobs

TOPOLOGY = {
    "framework": "pytorch",
    "hptuning": {"concurrency": 3, "matrix": {"lr": {"values": [0.1, 0.01, 0.001]}}},
}
CODE = """
from jupyter_px import tracking
for step in range(4):
    tracking.log_metrics(step=step, loss=lr * 10 ** (-step), acc=1 - lr)
"""


def test_a_sweep_without_an_objective_draws_every_logged_metric_per_trial(px_home):
    from jupyter_px.widgets.sweep_monitor import SweepMonitor

    sweep = jupyter_px.sweep(CODE, TOPOLOGY, name="no-objective")
    assert sweep.wait(timeout=600).state == SweepState.SUCCEEDED
    model = sweep.view_model()
    assert model.objectives == [] and model.note == NO_OBJECTIVE and "metric:" in NO_OBJECTIVE
    assert model.missing == {}  # said once, in the note, not once per view
    assert [m.name for m in model.metrics] == ["acc", "loss"]
    loss = next(m for m in model.metrics if m.name == "loss")
    assert sorted(c.trial for c in loss.trials) == [0, 1, 2]
    by_trial = {c.trial: c for c in loss.trials}
    lrs = {row.number: row.params["lr"] for row in sweep.rows()}
    for number, curve in by_trial.items():
        assert curve.steps == [0, 1, 2, 3]
        assert curve.values == pytest.approx([lrs[number] * 10 ** (-step) for step in range(4)])

    monitor = SweepMonitor(sweep, autostart=False)  # the notebook's monitor draws the same
    traces = monitor.objective_plot._widget_data
    assert sorted({t["name"] for t in traces}) == ["trial 0", "trial 1", "trial 2"]
    assert len(traces) == 6  # a line per trial in each metric's panel
    assert NO_OBJECTIVE.split(":")[0] in monitor.charts_note.value
    assert all(section.layout.display == "none" for section in monitor.view_sections.values())
