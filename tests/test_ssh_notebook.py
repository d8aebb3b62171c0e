"""An SSH run from a notebook: `%%px_distributed --backend ssh` over a cell that all-reduces, on
real sshd hosts (tests/ssh_hosts.py), with real kernels (nbclient)."""

from __future__ import annotations

import os
import re
import textwrap

import nbformat
import pytest
from nbclient import NotebookClient
from ssh_hosts import processes_of, ssh_hosts_fixture, use_ssh_fixture  # noqa: F401 (fixtures)

from jupyter_px.api import Run

pytestmark = pytest.mark.ssh


def _states(client) -> list[dict[str, str]]:
    found = []
    for state in client.widget_state.values():
        value = state.get("value")
        if isinstance(value, str) and "class='px-replicas'" in value:
            found.append(dict(re.findall(r"data-replica='([^']+)' data-state='([^']+)'", value)))
    return found


def test_px_distributed_runs_a_cell_on_the_ssh_hosts(use_ssh, px_home, tmp_path):
    code = textwrap.dedent("""\
        %%px_distributed --framework pytorch --workers 2 --backend ssh --name nb -o run --wait
        import torch, torch.distributed as dist
        from jupyter_px import tracking
        dist.init_process_group("gloo")
        total = torch.tensor([float(dist.get_rank())])
        dist.all_reduce(total)
        print("sum of ranks", total.item())
        tracking.log_metrics(step=1, total=total.item())
        """)
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(c) for c in ("%load_ext jupyter_px", code, "print(run.run_id)")]
    )
    client = NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    with client.setup_kernel(env={**os.environ, "PX_HOME": str(px_home)}):
        for index, cell in enumerate(notebook.cells):
            client.execute_cell(cell, index)
        final = _states(client)
    run_id = notebook.cells[2].outputs[0]["text"].strip()
    run = Run(run_id)
    assert run.record.backend == "ssh"
    assert final[-1] == {"master-0": "Succeeded", "worker-0": "Succeeded", "worker-1": "Succeeded"}, final
    assert "sum of ranks 3.0" in run.logs("worker", 1)
    assert {key: list(series["total"].values) for key, series in run.metrics().items()} == {
        key: [3.0] for key in ("master-0", "worker-0", "worker-1")
    }
    assert not processes_of(run_id)
