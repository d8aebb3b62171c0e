"""A sweep without a declared objective is still a sweep to look at: its view plots every metric
its trials logged, a line per trial, and says once how to declare an objective (it showed an
empty chart of invented axes, "-" in every value cell and "the sweep has no objective" five
times). A real 3-trial grid sweep on the local backend."""

from __future__ import annotations

import pytest

import jupyter_px
from jupyter_px.runstore.sweeps import SweepState
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
    from jupyter_px.widgets.sweep_monitor import SweepMonitor, plotted

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
    acc, loss = (plotted(monitor.objective_plot, i) for i in range(2))  # a figure per metric
    for figure, name in ((acc, "acc"), (loss, "loss")):
        assert [t["name"] for t in figure["data"]] == ["trial 0", "trial 1", "trial 2"]  # a line per trial
        assert figure["layout"]["yaxis"]["title"]["text"] == name
    assert NO_OBJECTIVE.split(":")[0] in monitor.charts_note.value
    assert all(section.layout.display == "none" for section in monitor.view_sections.values())


def test_every_logged_metric_is_the_codes_own_not_the_system_metrics_sampled_beside_it():
    """The supervisor samples `system/cpu_percent` and `system/rss_mib` of every replica; a trial
    that ran long enough has them beside its own metrics. "Every logged metric" is the code's:
    the sweep's per-trial charts and the live plot draw those (the `system/` ones when named)."""
    from jupyter_px.runstore.series import Series
    from jupyter_px.runstore.sweeps import SweepStatus, TrialRow, TrialState
    from jupyter_px.sweeps.view_model import trials_logged
    from jupyter_px.widgets.plots import static_figure

    data = {
        "master-0": {
            "loss": Series([0, 1], [1.0, 0.5], [0.0, 1.0]),
            "system/cpu_percent": Series([None, None], [99.0, 98.0], [0.0, 2.0]),
            "system/rss_mib": Series([None], [300.0], [0.0]),
        }
    }
    status = SweepStatus(sweep_id="s", trials=[TrialRow(number=0, state=TrialState.COMPLETE, run_id="run-1")])
    assert list(trials_logged(status, lambda run_id: data)[0]) == ["loss"]
    assert [trace.name for trace in static_figure(data).data] == ["master-0"]  # one panel: loss
    asked = static_figure(data, ["loss", "system/cpu_percent"])
    assert len(asked.data) == 2  # named, a system metric is drawn
