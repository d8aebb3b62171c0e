"""The ipywidgets sweep monitor (front-ends without the JupyterLab extension): its plots are one
output widget each, showing plotly's mimetype, redrawn in place and kept in the widget's synced
state (a saved notebook shows them), a trial with a value but no per-step points is still drawn, the color bar has its
room, a finished sweep's Stop is neutral, and every output names the sweep for the extension.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from jupyter_px.runstore.sweeps import SweepState, SweepStore, TrialState

MAKE_SWEEP = Path(__file__).resolve().parents[1] / "ui-tests" / "make_sweep.py"


def make_sweep(px_home: Path, name: str, trials: int) -> str:
    done = subprocess.run(
        [sys.executable, str(MAKE_SWEEP), name, str(trials)],
        env={**os.environ, "PX_HOME": str(px_home)},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_the_plots_are_edited_in_place_and_kept_in_the_saved_state(px_home):
    from jupyter_px.sweeps.api import Sweep
    from jupyter_px.widgets.run_mime import SWEEP_MIMETYPE
    from jupyter_px.widgets.sweep_monitor import SweepMonitor, plotted

    sweep_id = make_sweep(px_home, "lr", 4)
    store = SweepStore(px_home)
    status = store.status(sweep_id)
    status.state = SweepState.RUNNING
    for trial in status.trials[2:]:  # two trials still running, no value yet
        trial.state, trial.value, trial.values, trial.intermediate = TrialState.RUNNING, None, None, []
    store.write_status(status)

    monitor = SweepMonitor(Sweep(sweep_id), autostart=False)
    objective, parallel = monitor.objective_plot, monitor.parallel_plot
    assert len(plotted(objective)["data"]) == 2 and len(plotted(parallel)["data"]) == 1
    assert monitor.stop_button.button_style == "danger" and not monitor.stop_button.disabled

    # The sweep goes on: the last two trials end, one of them reported no per-step value.
    status = store.status(sweep_id)
    status.state = SweepState.SUCCEEDED
    for trial in status.trials[2:]:
        trial.state, trial.value, trial.values, trial.step = TrialState.COMPLETE, 0.3, {"loss": 0.3}, 9
    status.trials[2].intermediate = [(step, 0.3) for step in range(10)]
    store.write_status(status)
    monitor.refresh()

    assert monitor.objective_plot is objective and monitor.parallel_plot is parallel  # the same widgets
    assert [trace["name"].split(" (")[0] for trace in plotted(objective)["data"]] == [f"trial {n}" for n in range(4)]
    assert len(plotted(objective)["data"][3]["x"]) == 1  # a value without steps: one point
    dimensions = plotted(parallel)["data"][0]["dimensions"]
    assert len(dimensions[-1]["values"]) == 4
    assert plotted(parallel)["layout"]["margin"]["r"] >= 120  # the color bar is not clipped
    assert monitor.stop_button.disabled and monitor.stop_button.button_style == ""
    bundle = monitor._repr_mimebundle_()
    assert bundle[SWEEP_MIMETYPE] == {"version": 1, "sweep_id": sweep_id, "name": "lr", "state": "Succeeded"}
