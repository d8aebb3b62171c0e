"""`max_restarts` on the `native` backend: a replica may restart N times, and its N+1-th failure
fails the run (the kubelet alone would restart an `OnFailure` pod forever). The training code
really fails in the pod, the simulated kubelet restarts it with back-off, and the follower counts
the failures from the pod's container status; every attempt's log is kept."""

from __future__ import annotations

import pytest
from kube_sim_support import backend_cluster, wait_for
from kubernetes_support import DEADLINE_S, running, terminated, waiting

import jupyter_px
from jupyter_px.backends.kubernetes.shared.pod_state import failed_starts, restarts_exhausted
from jupyter_px.runstore import RunStore

pytestmark = pytest.mark.kube

#: Each start prints which attempt it is (counted in a file of the test's folder) and fails, once
#: the follower has stored that line (its log in the run store, on this machine's disk): an attempt
#: that ends before anyone reads it is gone on a real cluster too (the kubelet serves the current
#: container and the one before, no older). The first starts only once the test has seen the
#: follower at work (`go`): a follower that starts slowly on a loaded machine would first see the
#: pod after more failures than max_restarts allows, and say so.
FAILING = (
    "import os, pathlib, sys, time\n"
    "if os.environ['PX_TASK_TYPE'] == 'worker':\n"
    "    while not pathlib.Path({go!r}).exists():\n"
    "        time.sleep(0.05)\n"
    "    tries = pathlib.Path({tries!r})\n"
    "    with tries.open('a') as f:\n"
    "        f.write('x')\n"
    "    line = f'attempt {{len(tries.read_text())}}'\n"
    "    print(line, flush=True)\n"
    "    stored = pathlib.Path({stored!r}.replace('run-id-here', os.environ['PX_RUN_ID']))\n"
    "    deadline = time.monotonic() + 60\n"
    "    while time.monotonic() < deadline and line not in (stored.read_text() if stored.exists() else ''):\n"
    "        time.sleep(0.05)\n"
    "    sys.exit(3)\n"
    "time.sleep(600)\n"
)


@pytest.fixture(name="sim")
def sim_fixture(tmp_path, monkeypatch, px_home):
    with backend_cluster(tmp_path, monkeypatch, px_home, namespaces=("default",)) as cluster:
        yield cluster


def test_the_failure_after_max_restarts_fails_the_run_and_deletes_its_pods(sim, tmp_path, px_home):
    tries, go = tmp_path / "tries", tmp_path / "go"
    topology = {
        "framework": "pytorch",
        "backend": "native",
        "environment": {
            "replicas": {"n_workers": 1, "default_worker": {"restart_policy": "OnFailure", "max_restarts": 2}}
        },
    }
    stored = str(RunStore(px_home).paths("run-id-here").log("worker", 0))
    run = jupyter_px.submit(FAILING.format(tries=str(tries), go=str(go), stored=stored), topology)
    wait_for(lambda: run.status().replica("worker", 0).state.value == "Running", "worker-0 Running")
    go.touch()
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Failed", status
    assert "worker-0 failed (Error): failed 3 times (max_restarts 2): exited with code 3" in status.message
    worker = status.replica("worker", 0)
    assert (worker.state.value, worker.exit_code, worker.restarts) == ("Failed", 3, 2)
    wait_for(lambda: not sim.list("pods"), "the run's pods deleted")
    attempts = [line for line in run.logs("worker", 0).splitlines() if line.startswith("attempt")]
    started = len(tries.read_text())  # a fourth start may begin before the pod is deleted
    assert started in (3, 4) and attempts == [f"attempt {n}" for n in range(1, started + 1)], attempts


def pod(status: dict, policy: str = "OnFailure") -> dict:
    return {"spec": {"restartPolicy": policy, "containers": [{"name": "replica"}]}, "status": status}


@pytest.mark.parametrize(
    ("status", "failures"),
    [
        (running(restarts=2), 2),  # two failures, each followed by a restart
        (waiting("CrashLoopBackOff", restarts=2, phase="Running"), 3),  # the third, waiting for its restart
        (terminated("Failed", 1, "Error"), 1),
        (terminated("Succeeded", 0, "Completed"), 0),
    ],
)
def test_failures_are_the_restarts_plus_a_failed_latest_container(status, failures):
    assert failed_starts(pod(status))[0] == failures


def test_only_a_failure_past_max_restarts_exhausts_a_restarting_pod():
    crashing = waiting("CrashLoopBackOff", restarts=2, phase="Running")
    assert restarts_exhausted(pod(crashing), 3) is None
    assert restarts_exhausted(pod(crashing), 2) == (3, {"exitCode": 1, "reason": "Error"})
    assert restarts_exhausted(pod(crashing, policy="Never"), 0) is None  # the kubelet does not restart it
