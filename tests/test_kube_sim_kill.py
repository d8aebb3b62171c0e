"""`jupyter px kill` on the simulated cluster: one replica ended on purpose in its pod (an exec of
the shipped `replica_kill.py`, as `kubectl exec` would run it), as a crash would end it. The
kubelet reports the container's end (exit code 137), and the run does what its policies say: a
run without retries fails, naming the killed replica."""

from __future__ import annotations

import pytest
from kube_sim_support import backend_cluster
from px_cli import px
from waiting import wait_for

from jupyter_px.api import submit

pytestmark = pytest.mark.kube

#: Every replica steps until the test has killed worker-0; it meets no other (no process group).
CODE = """
import time
from jupyter_px import tracking
for step in range(100000):
    tracking.log_metrics(step=step, loss=1.0 / (step + 1))
    time.sleep(0.2)
"""


@pytest.mark.parametrize("backend", ["native", "kubeflow"])
def test_a_replica_killed_in_its_pod_ends_as_a_crash_and_the_run_names_it(backend, tmp_path, monkeypatch, px_home):
    with backend_cluster(tmp_path, monkeypatch, px_home):
        topology = {"framework": "pytorch", "backend": backend, "environment": {"replicas": {"n_workers": 1}}}
        run = submit(CODE, topology)
        try:
            wait_for(lambda: "worker-0" in run.metrics() and "master-0" in run.metrics(), "both replicas to step", 180)
            done = px("kill", run.run_id, "worker-0")
            assert done.returncode == 0, done.stderr
            assert done.stdout.startswith(f"sent SIGKILL to worker-0 of run {run.run_id} (pod "), done.stdout
            status = run.wait(timeout=180)
        finally:
            run.stop()
        assert status.state.value == "Failed", status
        worker = status.replica("worker", 0)
        assert worker.state.value == "Failed" and worker.exit_code == 137, worker  # 128 + SIGKILL, as the runtime says
        if backend == "native":  # the follower decides, naming the first failure
            assert status.message.startswith("worker-0 failed"), status.message
        else:  # the training operator decides, in its words
            assert status.message.endswith("is failed because 1 Worker replica(s) failed."), status.message
        again = px("kill", run.run_id, "worker-0")
        assert again.returncode == 1 and "nothing to kill" in again.stderr, again.stderr
