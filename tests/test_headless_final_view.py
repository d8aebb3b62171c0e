"""A notebook executed headless (nbclient, as papermill and jupyter-scheduler do) keeps the final
view of a non-blocking `%%px_distributed` whose run ends while later cells execute.

nbclient records only the messages whose parent is the cell it is executing (and updates an
output by display id from those): the saved file must show the run's final state, not the live
monitor, whichever of the later cells was running when the run ended.
"""

from __future__ import annotations

import os
import re

import nbformat
import pytest
from nbclient import NotebookClient

TOPOLOGY = """%%px_topology tiny
framework: pytorch
environment:
  replicas:
    n_workers: 1
"""

#: The replicas print and end after a short while, long after the submitting cell returned.
BODY = """import time
print("hello from the replica")
time.sleep({seconds})
"""

#: A later cell that runs while the run ends: it waits on the store (not on the monitor).
WAIT_FOR_END = """import time
from jupyter_px.api import runs
run = runs()[0]
while not run.status().state.finished:
    time.sleep(0.05)
"""


def _execute(cells: list[str], px_home, workdir) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(workdir)}})
    client.execute(env={**os.environ, "PX_HOME": str(px_home)})
    return nb


def _final_output(nb: nbformat.NotebookNode) -> dict:
    (cell,) = [c for c in nb.cells if c.source.startswith("%%px_distributed")]
    displays = [o for o in cell.outputs if o.output_type == "display_data"]
    assert len(displays) == 1, cell.outputs
    return displays[0]["data"]


def _assert_final(data: dict) -> None:
    assert "live monitor" not in data.get("text/plain", ""), data.get("text/plain")
    assert "application/vnd.jupyter.widget-view+json" not in data  # a saved file has no live model
    html = data["text/html"]
    assert "class='px-run-final'" in html and "data-state='Succeeded'" in html, html[:500]
    assert dict(re.findall(r"data-replica='([^']+)' data-state='([^']+)'", html)) == {
        "master-0": "Succeeded",
        "worker-0": "Succeeded",
    }
    assert "hello from the replica" in html  # the logs are in the saved view
    assert data["text/plain"].startswith("run ") and "Succeeded" in data["text/plain"]


@pytest.mark.jobs
def test_run_ending_during_a_later_long_cell(px_home, tmp_path):
    """The run ends while a later cell sleeps: the monitor's own update reaches the saved file."""
    nb = _execute(
        [
            "%load_ext jupyter_px",
            TOPOLOGY,
            "%%px_distributed -t tiny --name headless\n" + BODY.format(seconds=1),
            WAIT_FOR_END + "time.sleep(3)\n",
            "print('after')",
        ],
        px_home,
        tmp_path,
    )
    _assert_final(_final_output(nb))


@pytest.mark.jobs
def test_run_ending_just_as_a_later_cell_ends(px_home, tmp_path):
    """The last cell returns the moment the run has ended, before the monitor's thread looks: the
    end of that cell still writes the final view (nothing runs after it)."""
    nb = _execute(
        [
            "%load_ext jupyter_px",
            TOPOLOGY,
            "%%px_distributed -t tiny --name headless\n" + BODY.format(seconds=1),
            WAIT_FOR_END,
        ],
        px_home,
        tmp_path,
    )
    _assert_final(_final_output(nb))
