"""A sweep cell returns at once with its monitor, whatever the sweep's size, and the monitor's
charts fill as the trials report (a real kernel through nbclient, a real 6-trial sweep).

Checked as an order of events, never as seconds: the trials wait for a gate file before they
report anything, and the test opens the gate only after the sweep cell has finished. So a cell
that waited for its trials, or drew its charts before returning, is seen doing so: when the cell
has finished, its output holds the monitor (the header and the trials table) while no trial has
reported and no chart exists yet; once the gate opens, the charts are built and drawn by the
monitor's own thread, a line per trial.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import jupyter_px
from jupyter_px.runstore.sweeps import SweepState, TrialState

pytestmark = pytest.mark.jobs

TOPOLOGY = """%%px_topology six
framework: pytorch
hptuning:
  concurrency: 2
  grid_search:
    n_experiments: 6
  matrix:
    lr:
      values: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
  metric:
    name: loss
    optimization: minimize
"""

TRIAL = """%%px_distributed -t six --name six-trials -o sw
import os, time
from jupyter_px import tracking
while not os.path.exists({gate!r}):  # nothing is reported before the test opens the gate
    time.sleep(0.1)
for step in range(3):
    tracking.log_metrics(step=step, loss=lr / (step + 1))
"""

AFTER = """import gc, json
from jupyter_px.widgets.sweep_monitor import SweepMonitor, plotted
status = sw.wait(timeout=600)
(monitor,) = [o for o in gc.get_objects() if isinstance(o, SweepMonitor)]
monitor._thread.join(timeout=120)  # its last refresh, after the sweep ended
print(json.dumps({"state": status.state.value, "updating": monitor.updating,
                  "lines": len(plotted(monitor.objective_plot)["data"]),
                  "history": bool(plotted(monitor.view_plots["history"]))}))
"""


def _charts(client: NotebookClient) -> list[list]:
    """The plots the kernel's widgets show: each one's traces (plotly's mimetype in an output
    widget's synced `outputs`)."""
    figures = [
        (item.get("data") or {}).get("application/vnd.plotly.v1+json")
        for state in client.widget_state.values()
        for item in state.get("outputs") or []
    ]
    return [figure["data"] for figure in figures if figure is not None]


def test_a_sweep_cell_returns_with_its_monitor_before_any_trial_reports(px_home: Path, tmp_path: Path):
    gate = tmp_path / "gate"
    sources = ["%load_ext jupyter_px", TOPOLOGY, TRIAL.format(gate=str(gate)), AFTER]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])
    client = NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    with client.setup_kernel():
        for index in range(3):
            client.execute_cell(notebook.cells[index], index)
        # The sweep cell has finished; the trials are held at the gate.
        sweep = jupyter_px.Sweep("six-trials")
        status = sweep.status()
        assert not status.state.finished and status.n_trials == 6
        assert all(t.state in (TrialState.PENDING, TrialState.RUNNING) and not t.intermediate for t in status.trials)
        bundles = [o["data"] for o in notebook.cells[2].outputs if o.get("output_type") == "display_data"]
        assert any("application/vnd.jupyter.widget-view+json" in b for b in bundles), notebook.cells[2].outputs
        assert any(
            b.get("application/vnd.jupyter-px.sweep+json", {}).get("sweep_id") == sweep.sweep_id for b in bundles
        )
        tables = [s["value"] for s in client.widget_state.values() if "px-sweep-trials" in str(s.get("value"))]
        assert tables  # the monitor's header and trials table are out with the cell
        assert _charts(client) == []  # no chart was built while the cell ran

        gate.touch()
        client.execute_cell(notebook.cells[3], 3)
    result = json.loads(notebook.cells[3].outputs[-1]["text"].strip().splitlines()[-1])
    assert result == {"state": SweepState.SUCCEEDED.value, "updating": False, "lines": 6, "history": True}, result
    assert any(len(traces) == 6 for traces in _charts(client))  # drawn by the monitor's thread, a line per trial
    assert {t.state for t in sweep.rows()} == {TrialState.COMPLETE}
