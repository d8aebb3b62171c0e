"""notebooks/kubernetes.ipynb, executed in a fresh kernel against the fake API server.

The kernel finds the cluster through a kubeconfig pointing at the fake server; a thread of the
test plays the kubelet: each pod the run creates is started, prints what the training code would
print on a cluster (its `@px-metrics` lines included) and succeeds.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import nbformat
import pytest
from k8s_support import kube_fixture, running, terminated  # noqa: F401 (kube_fixture: the `kube` fixture)
from nbclient import NotebookClient

from jupyter_px.backends.kubernetes.pod_entry import cluster_contract

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "kubernetes.ipynb"


def play_kubelet(kube, stop: threading.Event) -> None:
    """Start every new pod, give it a log like the training code's, then let it succeed."""
    done: set[str] = set()
    while not stop.wait(0.1):
        for pod in kube.list("pods"):
            name = pod["metadata"]["name"]
            if name in done:
                continue
            done.add(name)
            env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
            # what the pod's entry point adds from the run's cluster description in its ConfigMap
            (configmap,) = [c for c in kube.list("configmaps") if c["metadata"]["name"] == pod["spec"]["subdomain"]]
            env.update(cluster_contract(json.loads(configmap["data"]["run.cluster.json"]), env))
            kube.set_pod_status(name, running())
            lines = [
                f"{env['PX_TASK_TYPE']}-{env['PX_TASK_INDEX']}: MASTER_ADDR={env['MASTER_ADDR']} RANK={env['RANK']}"
            ]
            for step in range(5):
                record = {"step": step, "time": 1.7e9 + step, "total_steps": 5, "metrics": {"loss": 1.0 / (step + 1)}}
                lines.append("@px-metrics " + json.dumps(record))
            kube.append_log(name, "\n".join(lines) + "\n")
            kube.set_pod_status(name, terminated("Succeeded", 0, "Completed"))


@pytest.mark.kube
def test_kubernetes_notebook(kube, px_home, tmp_path):
    stop = threading.Event()
    kubelet = threading.Thread(target=play_kubelet, args=(kube, stop), daemon=True)
    kubelet.start()
    nb = nbformat.read(NOTEBOOK, as_version=4)
    try:
        NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute(
            env={**os.environ, "PX_HOME": str(px_home)}
        )
    finally:
        stop.set()
        kubelet.join(5)
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
    assert f"worker-1: MASTER_ADDR={run.run_id}-master-0.{run.run_id}.default.svc RANK=2" in run.logs("worker", 1)
    assert list(run.metrics()["worker-1"]["loss"].values) == [1.0, 0.5, 1 / 3, 0.25, 0.2]
    plots = [
        o["data"]["application/vnd.plotly.v1+json"]
        for cell in nb.cells
        if cell.cell_type == "code" and cell.source.startswith("%px_plot")
        for o in cell.outputs
        if "data" in o
    ]
    assert plots and sum(len(trace["x"]) for trace in plots[0]["data"]) == 15
    assert not kube.list("pods")  # the finished run's pods were cleaned up; its logs are in the store
