"""notebooks/workloads.ipynb: the reference workloads (examples/workloads/) as `%%px_distributed`
cells. Its cells are the scripts, unchanged (checked), and it runs top to bottom in a fresh kernel
(nbclient), each run checked for what it computed (tests/workloads_support.py)."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from workloads_support import WORKLOADS, check_run

from jupyter_px.service import RunService

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "workloads.ipynb"


def _cells(nb) -> dict[str, str]:
    """{run name: the body} of each %%px_distributed cell."""
    found = {}
    for cell in nb.cells:
        first, _, body = cell.source.partition("\n")
        if cell.cell_type == "code" and first.startswith("%%px_distributed"):
            found[first.split("--name ", 1)[1].split()[0]] = body
    return found


def test_the_notebooks_cells_are_the_scripts():
    cells = _cells(nbformat.read(NOTEBOOK, as_version=4))
    assert set(cells) == {name.replace("_", "-") for name in WORKLOADS}
    for name, workload in WORKLOADS.items():
        assert cells[name.replace("_", "-")] == workload.path.read_text().rstrip("\n"), name


@pytest.mark.jobs
@pytest.mark.timeout(900)  # every workload in turn: over 300 s in the project's CI on a slow machine
def test_the_workloads_notebook_runs(px_home, tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute(env={**os.environ, "PX_HOME": str(px_home)})

    service = RunService()
    runs = {view.record.name: view.record.run_id for view in service.list_runs()}
    assert set(runs) == {name.replace("_", "-") for name in WORKLOADS}, runs
    for name in WORKLOADS:
        check_run(service, runs[name.replace("_", "-")], name)
    plots = [o for cell in nb.cells if cell.source.startswith("%px_plot") for o in cell.outputs]
    figures = [o["data"]["application/vnd.plotly.v1+json"] for o in plots if "data" in o]
    assert len(figures) == 2 and all(sum(len(t["x"]) for t in f["data"]) > 0 for f in figures)
