"""The same sweep on the simulated Kubernetes cluster with `backend: native`: every trial is a
set of pods (real processes, cluster DNS), followed into the run store; the sweep's controller
reads the chief's metrics from there, prunes by stopping the trial's pods, and every replica sees
its trial's values.

One trial at a time here: the simulated kubelet gives each pod its own address but not its own
network namespace (tests/kube_sim/README.md), and torch's TCPStore binds every address, so two
trials' masters on port 23456 at once collide (EADDRINUSE), which no real cluster does."""

from __future__ import annotations

import json

import pytest
from kubernetes_support import DEADLINE_S
from test_kube_sim_backends import sim_fixture  # noqa: F401 - the simulated cluster fixture

import jupyter_px
from jupyter_px.runstore.sweeps import SweepState, TrialState

pytestmark = pytest.mark.kube

TRAIN = """
import json, os, time
import torch, torch.distributed as dist
from jupyter_px import tracking

print("seen", json.dumps({"get_params": tracking.get_params(), "env": json.loads(os.environ["PX_PARAMS"]),
      "globals": {"lr": lr}}, sort_keys=True), flush=True)
dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=lr)
for step in range(1, 5):
    x = torch.randn(16, 4)
    loss = ((model(x) - x.sum(dim=1, keepdim=True)) ** 2).mean()
    optimizer.zero_grad(); loss.backward(); optimizer.step()
    if dist.get_rank() == 0:
        tracking.log_metrics(step=step, loss=abs(lr - 0.05) * 100 + loss.item() / step)
    time.sleep(0.5)
dist.destroy_process_group()
"""

TOPOLOGY = """
framework: pytorch
backend: native
environment:
  replicas:
    n_workers: 1
hptuning:
  concurrency: 1
  seed: 5
  random_search: {n_experiments: 4}
  matrix:
    lr: {uniform: 0.001:0.2}
  early_stopping:
    - metric: loss
      optimization: minimize
      policy: {kind: median, evaluation_interval: 1, min_interval: 1, min_samples: 1}
"""


def test_a_sweep_runs_on_the_native_backend(sim, px_home):
    sweep = jupyter_px.sweep(TRAIN, TOPOLOGY, name="k8s-sweep")
    status = sweep.wait(timeout=DEADLINE_S * 4)
    log = (px_home / "sweeps" / sweep.sweep_id / "controller.log").read_text()
    assert status.state == SweepState.SUCCEEDED, (status.message, log)
    rows = sweep.rows()
    assert len(rows) == 4 and {r.state for r in rows} <= {TrialState.COMPLETE, TrialState.PRUNED}
    runs = {run.record.sweep.trial: run for run in sweep.trials()}
    spans = [(run.record.created_at, run.status().finished_at) for run in runs.values()]
    assert max(sum(1 for s, e in spans if s <= start < e) for start, _ in spans) == 1
    for row in rows:
        run = runs[row.number]
        assert run.record.backend == "native"
        expected = json.dumps({"env": row.params, "get_params": row.params, "globals": row.params}, sort_keys=True)
        for role in ("master", "worker"):
            assert f"seen {expected}" in run.logs(role, 0), run.logs(role, 0)
        if row.state == TrialState.PRUNED:
            assert run.status().state.value == "Stopped"
        else:
            assert run.status().state.value == "Succeeded"
            assert row.value == run.metrics()["master-0"]["loss"].values[-1]
    assert sweep.best is not None
