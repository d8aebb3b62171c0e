"""notebooks/kubernetes.ipynb, executed in a fresh kernel against the simulated cluster.

The kernel finds the cluster through a kubeconfig pointing at the simulated API server; its
kubelet runs the notebook's training code in each pod for real (the pods' names resolve through
the run's headless Service), and what the code prints (its `@px-metrics` lines included) is what
the follower stores.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from kube_sim_support import wait_for
from kubernetes_support import kube_fixture  # noqa: F401 (the `kube` fixture)
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "kubernetes.ipynb"


@pytest.mark.kube
def test_kubernetes_notebook(kube, px_home, tmp_path):
    if not kube.kubelet.isolated:
        pytest.skip(f"pods cannot have their own names and addresses here: {kube.kubelet.not_isolated_because}")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute(
        env={**os.environ, "PX_HOME": str(px_home)}
    )
    text = {i: "".join(o.get("text", "") for o in cell.get("outputs", [])) for i, cell in enumerate(nb.cells)}
    listing = next(t for t in text.values() if t.startswith("ConfigMap  k8s-demo"))
    assert "Service    k8s-demo" in listing and "Pod        k8s-demo-worker-1" in listing
    rendered = next(t for t in text.values() if "kind: Service" in t)
    assert "clusterIP: None" in rendered and "subdomain: k8s-demo" in rendered
    assert "k8s-demo-master-0.k8s-demo.default.svc" in rendered  # MASTER_ADDR, by cluster DNS

    from jupyter_px.api import runs

    (run,) = runs()
    assert run.record.backend == "native" and run.status().state.value == "Succeeded"
    assert any(t.startswith("Succeeded") for t in text.values())
    expected = f"worker-1 of run {run.run_id}: MASTER_ADDR={run.run_id}-master-0.{run.run_id}.default.svc RANK=2"
    assert expected in run.logs("worker", 1)
    assert list(run.metrics()["worker-1"]["loss"].values) == [1.0, 0.5, 1 / 3, 0.25, 0.2]
    plots = [
        o["data"]["application/vnd.plotly.v1+json"]
        for cell in nb.cells
        if cell.cell_type == "code" and cell.source.startswith("%px_plot")
        for o in cell.outputs
        if "data" in o
    ]
    assert plots and sum(len(trace["x"]) for trace in plots[0]["data"]) == 15
    wait_for(lambda: not kube.list("pods"), "the finished run's pods cleaned up")  # its logs are in the store
