"""A hung run on the simulated cluster is marked Stalled: its follower judges the replicas from
the metrics their logs' `@px-metrics` lines became in the store (`diagnostics.stalls`), as the
local supervisor and the Slurm follower do. The training code really runs in the pods."""

from __future__ import annotations

import pytest
from kubernetes_support import DEADLINE_S, kube_fixture, wait_for  # noqa: F401 (kube_fixture: the `kube` fixture)

import jupyter_px

pytestmark = pytest.mark.kube

#: Each replica logs five steps a tenth of a second apart, then waits as a rank in a collective
#: whose peer never comes would.
HANG = (
    "import time\n"
    "from jupyter_px import tracking\n"
    "for step in range(5):\n"
    "    tracking.log_metrics(step=step, loss=1.0 / (step + 1))\n"
    "    time.sleep(0.1)\n"
    "time.sleep(600)\n"
)


def test_a_hung_run_on_kubernetes_is_marked_stalled_while_running(kube, px_home, monkeypatch):
    monkeypatch.setenv("PX_STALL_AFTER_S", "4")  # the follower, started by this process, reads it
    topology = {"framework": "pytorch", "backend": "native", "environment": {"replicas": {"n_workers": 1}}}
    run = jupyter_px.submit(HANG, topology, name="hang")
    try:
        status = wait_for(
            lambda: (s := run.status()).replicas and all(r.stalled_since is not None for r in s.replicas) and s,
            "every replica marked Stalled",
            timeout=DEADLINE_S,
        )
        assert status.state.value == "Running", status  # a mark, not a state
        for replica in status.replicas:
            assert replica.state.value == "Running" and replica.stall_after_s == pytest.approx(4.0), replica
    finally:
        run.stop()
