"""notebooks/sweep.ipynb runs top to bottom in a fresh kernel (nbclient): a random search of 8
two-replica PyTorch DDP trials, two at a time, with pruning, started by `%%px_distributed` on a
topology with a sweep, shown by the sweep monitor. Slow (the `jobs` lane)."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import jupyter_px
from jupyter_px.runstore import RunState
from jupyter_px.runstore.sweeps import SweepState, TrialState

pytestmark = pytest.mark.jobs

NOTEBOOK = Path(__file__).parent.parent / "notebooks" / "sweep.ipynb"


def test_the_sweep_notebook(px_home, tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute(env={**os.environ, "PX_HOME": str(px_home)})

    sweep = jupyter_px.Sweep("ddp-sweep")
    status = sweep.status()
    assert status.state == SweepState.SUCCEEDED, status.message
    rows = sweep.rows()
    assert len(rows) == 8 and {r.state for r in rows} <= {TrialState.COMPLETE, TrialState.PRUNED}
    assert any(r.state == TrialState.PRUNED for r in rows)
    runs = {run.record.sweep.trial: run for run in sweep.trials()}
    spans = [(run.record.created_at, run.status().finished_at) for run in runs.values()]
    assert max(sum(1 for s, e in spans if s <= start < e) for start, _ in spans) <= 2  # concurrency 2
    for row in rows:
        run = runs[row.number]
        assert len(run.replicas()) == 2 and run.params == row.params
        expected = RunState.STOPPED if row.state == TrialState.PRUNED else RunState.SUCCEEDED
        assert run.status().state == expected
    best = min((r for r in rows if r.state == TrialState.COMPLETE), key=lambda r: r.value)
    assert sweep.best.run_id == best.run_id

    # the cells' outputs: the best trial printed, the table, the sweeps list
    text = "".join(
        output.get("text", "") + str(output.get("data", {}).get("text/plain", ""))
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    )
    assert f"best: <Run {best.run_id} Succeeded>" in text
    assert "params_lr" in text and "ddp-sweep" in text
    # the sweep monitor's saved state: the trials table with every trial, and both plots
    saved = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    tables = [e["state"]["value"] for e in saved.values() if "px-sweep-trials" in str(e["state"].get("value"))]
    assert tables and all(table.count("class='px-sweep-trial'") == 8 for table in tables)
    figures = [  # plotly's mimetype in the plots' output widgets
        (item.get("data") or {}).get("application/vnd.plotly.v1+json")
        for e in saved.values()
        for item in e["state"].get("outputs") or []
    ]
    kinds = {trace.get("type") for figure in figures if figure for trace in figure["data"]}
    assert {"scatter", "parcoords"} <= kinds
