"""`jupyter_px.submit(fn)` without a topology runs on the notebook's current one (the last
`%%px_topology`, as `%%px_distributed` does), and without one says in one line that a topology
is needed and how to give one, before anything starts (a real kernel, nbclient; real runs)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from jupyter_px.api import NO_TOPOLOGY


def _text(cell: nbformat.NotebookNode) -> str:
    return "".join(
        output.get("text", "") or output.get("data", {}).get("text/plain", "") for output in cell.get("outputs", [])
    )


@pytest.mark.jobs
def test_submit_without_a_topology_uses_the_notebooks_or_says_how_to_give_one(px_home, tmp_path: Path):
    cells = [
        "import os, json\nimport jupyter_px\n%load_ext jupyter_px",
        "def rank():\n    return int(os.environ['RANK'])",
        "try:\n"
        "    jupyter_px.submit(rank)\n"
        "except Exception as error:\n"
        "    print(type(error).__name__, '|', error, '|', len(jupyter_px.runs()), 'runs')",
        "%%px_topology three\nframework: pytorch\nenvironment:\n  replicas:\n    n_workers: 2",
        "run = jupyter_px.submit(rank)\nprint(json.dumps(run.results(timeout=300)))",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])
    NotebookClient(
        notebook, timeout=600, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    refused = _text(notebook.cells[2]).strip()
    assert refused == f"NoTopology | {NO_TOPOLOGY} | 0 runs", refused  # one line, nothing started
    assert "\n" not in NO_TOPOLOGY and "%%px_topology" in NO_TOPOLOGY
    ranks = _text(notebook.cells[4]).strip().splitlines()
    assert ranks and json.loads(ranks[-1]) == [0, 1, 2], _text(notebook.cells[4])  # the notebook's 3 replicas
