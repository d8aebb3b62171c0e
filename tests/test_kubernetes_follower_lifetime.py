"""A follower ends by itself, and is started once.

It ends when its run directory is deleted (without recreating it) and when the API server has
not answered for `PX_K8S_FOLLOWER_GIVE_UP_S`, leaving the run's state as it was (the cluster may
still run it) and saying how to follow it again; a read then reports that nobody follows the run,
and the next keeper (`reconcile`) follows it again. HTTP errors are answers and do not count toward
giving up. However often a new run is kept while its follower is still starting, no second
follower is started. The followers are this test process's children (started by
`jupyter_px.processes.detached`), so every exit code is known: each is asserted, never "0 or unknown".
"""

from __future__ import annotations

import os
import shutil
import signal

import pytest
from kube_sim import Cluster
from kubernetes_support import (  # noqa: F401 (kube_fixture: the `kube` fixture)
    DEADLINE_S,
    kube_fixture,
    started_followers,
    wait_for,
    wait_for_file,
    wait_gone,
)

import jupyter_px
from jupyter_px.backends.base import BackendError
from jupyter_px.backends.followed import owner_alive as follower_alive
from jupyter_px.backends.kubernetes.shared.client import connect
from jupyter_px.backends.kubernetes.shared.contact import Contact
from jupyter_px.backends.kubernetes.shared.settings import load_settings

TORCH = {"framework": "pytorch", "backend": "native", "environment": {"replicas": {"n_workers": 1}}}


def follower_of(run) -> int:
    """The pid of the run's follower (its owner in status.json), once it has taken the run's lock."""
    wait_for(lambda: (run.paths.root / "follower" / ".lock").exists(), what="the follower to start")
    return run.status().owner.pid


@pytest.mark.pods_stay_pending
def test_a_new_run_is_followed_once_however_often_it_is_kept(kube, px_home):
    """The follower is frozen (SIGSTOP) the moment `submit` returns, wherever it is: still in exec,
    importing, or waiting for its first status. Every keeper's look in that state must see it."""
    run = jupyter_px.submit("pass\n", TORCH)
    (started,) = started_followers()
    assert run.status().owner.pid == started  # recorded before it could run
    os.kill(started, signal.SIGSTOP)
    try:
        for _ in range(5):
            assert run.backend.observe(run.run_id).owner_problem is None
            assert run.backend.follow(run.run_id) is None
            run.reconcile()
        assert started_followers() == [started]
    finally:
        os.kill(started, signal.SIGCONT)
    assert follower_of(run) == started


def test_follower_ends_when_its_run_directory_is_deleted(kube, px_home, tmp_path):
    go = tmp_path / "go"
    code = "print('first', flush=True)\n" + wait_for_file(go) + "print('written to a run that is gone', flush=True)\n"
    run = jupyter_px.submit(code + "time.sleep(600)\n", TORCH)
    master = f"{run.run_id}-master-0"
    wait_for(lambda: run.logs("master", 0) == "first\n", what="the log stored")
    pid = follower_of(run)
    # as a user would, again if the follower wrote a file into it meanwhile ("Directory not empty")
    wait_for(lambda: shutil.rmtree(run.paths.root, ignore_errors=True) or not run.paths.root.exists(), what="gone")
    go.touch()  # the pod prints on: its log stream must not recreate the run directory
    assert wait_gone(pid) == 0
    assert not run.paths.root.exists()
    assert kube.get("pods", master) is not None  # a deleted directory is not a request to stop the job


def test_follower_gives_up_without_the_api_server_and_the_next_look_follows_again(kube, px_home, monkeypatch, tmp_path):
    monkeypatch.setenv("PX_K8S_FOLLOWER_GIVE_UP_S", "2")
    go = tmp_path / "go"
    code = (
        "import os\nif os.environ['PX_TASK_TYPE'] == 'master':\n    print('before', flush=True)\n"
        + wait_for_file(go)
        + "if os.environ['PX_TASK_TYPE'] == 'master':\n    print('after', flush=True)\n"
    )
    run = jupyter_px.submit(code, TORCH)
    wait_for(lambda: run.status().state.value == "Running", what="run Running")
    wait_for(lambda: run.logs("master", 0) == "before\n", what="the log stored")
    pid = follower_of(run)
    with kube.outage():
        assert wait_gone(pid) == 0
        status = run.status()
        assert status.state.value == "Running" and status.reason == "LostContact"  # not Failed: it may still run
        assert status.message.startswith(f"lost contact with the Kubernetes API at {kube.url} for ")
        assert "starts following it again" in status.message
        assert status.owner is None
        assert status.replica("master", 0).state.value == "Running"  # no answer is not "no pods"
        assert started_followers() == []
        assert run.backend.observe(run.run_id).owner_problem == "nobody is following this run"
        assert started_followers() == [] and run.status() == status  # a read starts nothing
        go.touch()  # the pods go on meanwhile: the cluster runs without its API's clients
    run.reconcile()  # the keeper's step starts a follower again
    (again,) = started_followers()
    assert again != pid
    wait_for(lambda: run.status().reason != "LostContact", what="the new follower's status")
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Succeeded"
    assert run.logs("master", 0) == "before\nafter\n"
    assert wait_gone(again) == 0  # a finished run's follower ends by itself


def test_an_http_error_is_an_answer_a_refused_connection_is_not(tmp_path, monkeypatch):
    now = [100.0]
    contact = Contact(clock=lambda: now[0])
    monkeypatch.setenv("PX_K8S_CONFIG", str(tmp_path / "none.yaml"))
    with Cluster(controllers=()) as fake:
        monkeypatch.setenv("KUBECONFIG", fake.kubeconfig(tmp_path / "kubeconfig"))
        cluster = connect(load_settings())
        fake.fail("GET", "pods", 503, "ServiceUnavailable", "etcd is busy")
        with pytest.raises(Exception) as answered:
            cluster.core.list_namespaced_pod("default")
        contact.failed(answered.value)
        assert contact.reachable and contact.unreachable_for() == 0.0
    with pytest.raises(Exception) as refused:  # the server is gone: connection refused
        cluster.core.list_namespaced_pod("default")
    cluster.close()
    contact.failed(refused.value)
    now[0] += 7.5
    contact.failed(refused.value)  # still failing: the clock runs from the first failure
    assert not contact.reachable and contact.unreachable_for() == 7.5
    assert "refused" in (contact.last_error or "").lower()
    contact.answered()
    assert contact.reachable and contact.unreachable_for() == 0.0


def test_give_up_setting_is_checked(monkeypatch, tmp_path):
    monkeypatch.setenv("PX_K8S_CONFIG", str(tmp_path / "none.yaml"))
    monkeypatch.setenv("PX_K8S_FOLLOWER_GIVE_UP_S", "0")
    with pytest.raises(BackendError, match="PX_K8S_FOLLOWER_GIVE_UP_S: follower_give_up_s: 0 is not a valid count"):
        load_settings()
    monkeypatch.setenv("PX_K8S_FOLLOWER_GIVE_UP_S", "45")
    assert load_settings().follower_give_up_s == 45


@pytest.mark.pods_stay_pending
def test_a_follower_is_known_by_pid_and_creation_time(kube, px_home):
    run = jupyter_px.submit("pass\n", TORCH)
    pid = follower_of(run)
    status = run.status()
    assert status.owner.kind == "follower" and follower_alive(status)
    later = status.owner.model_copy(update={"started_at": status.owner.started_at + 5})  # pid reused
    assert not follower_alive(status.model_copy(update={"owner": later}))
    init = status.owner.model_copy(update={"pid": 1})  # a live process, not this run's follower
    assert not follower_alive(status.model_copy(update={"owner": init}))
    assert not (run.paths.root / "follower.pid").exists()  # retired: the owner in status.json says it
    assert pid in started_followers()
