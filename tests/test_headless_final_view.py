"""A notebook executed headless (nbclient, as papermill and jupyter-scheduler do) keeps the final
view of a non-blocking `%%px_distributed` whose run ends while later cells execute.

nbclient records only the messages whose parent is the cell it is executing (and updates an
output by display id from those): the saved file must show the run's final state, not the live
monitor, whichever of the later cells was running when the run ended. A run that outlives the
last cell cannot be written into the file after it: its saved output carries the run's mimetype,
whose run id the extension's renderer reads the run's state with now (the REST API, below).
"""

from __future__ import annotations

import asyncio
import json
import os
import re

import nbformat
import pytest
from nbclient import NotebookClient

from jupyter_px.widgets.run_mime import MIMETYPE

pytest_plugins = ["pytest_jupyter.jupyter_server"]

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


def _client(cells: list[str], workdir) -> NotebookClient:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    return NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(workdir)}})


def _execute(cells: list[str], px_home, workdir) -> nbformat.NotebookNode:
    client = _client(cells, workdir)
    client.execute(env={**os.environ, "PX_HOME": str(px_home)})
    return client.nb


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
    # The run's mimetype beside the static view: the extension shows the run as it is now.
    payload = data[MIMETYPE]
    assert payload["version"] == 1 and payload["final"] is True
    assert payload["state"] == "Succeeded" and payload["finished"] is True
    assert payload["name"] == "headless" and payload["run_id"].startswith("headless")
    assert {r["key"]: r["state"] for r in payload["replicas"]} == {"master-0": "Succeeded", "worker-0": "Succeeded"}


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


@pytest.fixture
def jp_server_config(px_home):
    """A Jupyter server with the extension, serving the test's run store (the renderer's API)."""
    return {"ServerApp": {"jpserver_extensions": {"jupyter_px": True}}}


@pytest.mark.jobs
async def test_run_outliving_the_last_cell_saves_its_mimetype(px_home, tmp_path, jp_fetch):
    """nbclient reads nothing after the last cell, so a run still running then is saved as the
    live monitor; its output also carries the run's mimetype, and the run id in it is what the
    extension's renderer asks the server for: once the run has ended the server says so."""
    client = _client(
        ["%load_ext jupyter_px", TOPOLOGY, "%%px_distributed -t tiny --name outlives\n" + BODY.format(seconds=4)],
        tmp_path,
    )
    await client.async_execute(env={**os.environ, "PX_HOME": str(px_home)})
    nb = client.nb
    data = _final_output(nb)
    payload = data[MIMETYPE]
    assert payload["version"] == 1 and payload["final"] is False and payload["finished"] is False
    assert payload["state"] in ("Pending", "Running"), payload
    assert payload["name"] == "outlives"
    # Viewers without the extension still read what the output is.
    assert "application/vnd.jupyter.widget-view+json" in data and "live monitor" in data["text/plain"]
    # The notebook is written as nbformat saves it, and read back: the bundle survives the file.
    path = tmp_path / "saved.ipynb"
    nbformat.write(nb, path)
    saved = _final_output(nbformat.read(path, as_version=4))[MIMETYPE]
    assert saved == payload

    run_id = saved["run_id"]
    deadline = asyncio.get_running_loop().time() + 120
    while True:
        response = await jp_fetch("px", "api", "runs", run_id)
        detail = json.loads(response.body)
        if detail["finished"] or asyncio.get_running_loop().time() > deadline:
            break
        await asyncio.sleep(0.2)
    assert detail["run_id"] == run_id and detail["state"] == "Succeeded", detail
    metrics = json.loads((await jp_fetch("px", "api", "runs", run_id, "metrics")).body)
    assert metrics["finished"] is True
