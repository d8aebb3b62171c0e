"""`%px_compare` and `jupyter_px.compare(...)` in a notebook run by nbclient in a fresh kernel,
over real runs: two local jobs (a master and a worker each) that log a loss and their learning
rate through `jupyter_px.tracking`, started and waited for in the notebook itself.

What a reader of the saved notebook gets is checked: the plotly figure with a line per run (the
best thick), the table with the param
that differs and the best value starred, and the TensorBoard command for the same runs.
"""

from __future__ import annotations

import os

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.jobs

TRAIN = """
import sys
from jupyter_px import tracking
lr = float(sys.argv[1])
tracking.log_params(lr=lr)
for step in range(200):
    tracking.log_metrics(step=step, loss=1.0 / (1.0 + lr * step), acc=1.0 - 1.0 / (1.0 + lr * step))
"""

CELLS = [
    "import jupyter_px\n%load_ext jupyter_px",
    f"TRAIN = {TRAIN!r}\n"
    "topology = {'framework': 'pytorch', 'environment': {'replicas': {'n_workers': 1}}}\n"
    "runs = [jupyter_px.submit(TRAIN, topology, name=f'cmp-lr-{lr}', args=[str(lr)]) for lr in (0.5, 0.01)]\n"
    "states = [run.wait(timeout=240).state.value for run in runs]\n"
    "print(states)",
    "%px_compare cmp-lr-0.5 cmp-lr-0.01",
    "c = jupyter_px.compare(pattern='cmp-lr-*', optimization={'acc': 'max'}, points=50)\n"
    "print(c.dataframe()[['name', 'best_loss', 'best_acc', 'lr']].sort_values('lr').to_string())\nc",
    "%px_compare --metric nope cmp-lr-0.5",
    # the direction's two spellings: --optimize, and --optimise / optimisation= as first written
    "%px_compare cmp-lr-0.5 cmp-lr-0.01 --metric loss --optimize loss:max -o new\n"
    "%px_compare cmp-lr-0.5 cmp-lr-0.01 --metric loss --optimise loss:max -o old\n"
    "api = jupyter_px.compare(pattern='cmp-lr-*', metrics=['loss'], optimisation={'loss': 'max'})\n"
    "print([c.comparison.metric('loss').optimization for c in (new, old, api)])",
]


def outputs_of(nb, index: int) -> list[dict]:
    return nb.cells[index].outputs


def test_px_compare_in_a_notebook_over_real_runs(px_home, tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    client = NotebookClient(
        nb, timeout=300, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute(env={**os.environ, "PX_HOME": str(px_home)})

    assert "['Succeeded', 'Succeeded']" in "".join(o.get("text", "") for o in outputs_of(nb, 1))

    figure, table, *rest = [o for o in outputs_of(nb, 2) if o["output_type"] == "display_data"]
    plot = figure["data"]["application/vnd.plotly.v1+json"]
    lines = [trace for trace in plot["data"] if trace["meta"]["run_id"]]
    assert len(lines) == 4  # two runs x two metrics, one panel each
    best = [trace for trace in lines if trace["meta"]["best"]]
    assert {trace["name"].split(" ")[0] for trace in best} == {"cmp-lr-0.5"}
    assert all(trace["line"]["width"] > 3 for trace in best)
    # In JupyterLab the extension's comparison panel shows these runs (the first output names them).
    assert figure["data"]["application/vnd.jupyter-px.compare+json"]["part"] == "main"
    assert figure["data"]["application/vnd.jupyter-px.compare+json"]["runs"] == [
        trace["meta"]["run_id"] for trace in plot["data"][:2]
    ]
    assert table["data"]["application/vnd.jupyter-px.compare+json"]["part"] == "table"
    html = table["data"]["text/html"]
    assert "loss best (min)" in html and "acc best (max)" in html and ">lr<" in html
    assert "★" in html and "%px_tensorboard" in html
    assert "cmp-lr-0.5" in table["data"]["text/plain"]
    assert not any("application/vnd.jupyter.widget-view+json" in o["data"] for o in rest)  # no ipywidgets

    text = "".join(o.get("text", "") for o in outputs_of(nb, 3))
    assert "cmp-lr-0.5" in text and "0.5" in text and "0.01" in text
    shown = [o for o in outputs_of(nb, 3) if o["output_type"] == "display_data"]
    assert len(shown) >= 2 and "application/vnd.plotly.v1+json" in shown[0]["data"]
    assert all(len(trace["x"]) <= 50 for trace in shown[0]["data"]["application/vnd.plotly.v1+json"]["data"])

    # IPython shows a UsageError as one line on stderr, without a traceback.
    said = "".join(o.get("text", "") for o in outputs_of(nb, 4) if o.get("name") == "stderr")
    assert "UsageError: metrics: no run has 'nope' (they have: acc, loss)" in said

    assert "['max', 'max', 'max']" in "".join(o.get("text", "") for o in outputs_of(nb, 5))
