"""A follower ends by itself, and is started once.

It ends when its run directory is deleted (without recreating it) and when the API server has
not answered for `PX_K8S_FOLLOWER_GIVE_UP_S`, leaving the run's state as it was (the cluster may
still run it) and saying how to follow it again; the next look at the run does. HTTP errors are
answers and do not count toward giving up. However often a new run is looked at while its
follower is still starting, no second follower is started.
"""

from __future__ import annotations

import shutil

import pytest
from fake_kube import FakeKube
from k8s_support import (  # noqa: F401 (kube_fixture: the `kube` fixture)
    DEADLINE_S,
    follower_pids,
    kube_fixture,
    running,
    terminated,
    wait_gone,
    wait_until,
)

import jupyter_px
from jupyter_px.backends.base import BackendError
from jupyter_px.backends.kubernetes.backend import running_follower
from jupyter_px.backends.kubernetes.client import connect
from jupyter_px.backends.kubernetes.contact import Contact
from jupyter_px.backends.kubernetes.settings import load_settings

TORCH = {"framework": "pytorch", "backend": "native", "environment": {"replicas": {"n_workers": 1}}}


def follower_of(run) -> int:
    """The pid of the run's follower once it has written the run's status."""
    return wait_until(lambda: run.store.status(run.run_id).supervisor_pid, what="the follower's first status")


def test_a_new_run_is_followed_once_however_often_it_is_looked_at(kube, px_home):
    run = jupyter_px.submit("pass\n", TORCH)
    started = follower_pids(px_home)
    assert len(started) == 1
    for _ in range(5):  # at once, while the follower is (almost surely) still importing
        assert run.backend.follow(run.run_id) is None
        run.reconcile()
    assert follower_pids(px_home) == started
    assert follower_of(run) == started[0]


def test_follower_ends_when_its_run_directory_is_deleted(kube, px_home):
    run = jupyter_px.submit("pass\n", TORCH)
    master = f"{run.run_id}-master-0"
    kube.set_pod_status(master, running())
    kube.append_log(master, "first\n")
    wait_until(lambda: run.logs("master", 0) == "first\n", what="the log stored")
    pid = follower_of(run)
    shutil.rmtree(run.paths.root)
    kube.append_log(master, "written to a run that is gone\n")  # its log stream must not recreate it
    assert wait_gone(pid) in (0, None)  # None: reaped meanwhile (subprocess reaps lost children)
    assert not run.paths.root.exists()
    assert kube.get("pods", master) is not None  # a deleted directory is not a request to stop the job


def test_follower_gives_up_without_the_api_server_and_the_next_look_follows_again(kube, px_home, monkeypatch):
    monkeypatch.setenv("PX_K8S_FOLLOWER_GIVE_UP_S", "2")
    run = jupyter_px.submit("pass\n", TORCH)
    master = f"{run.run_id}-master-0"
    kube.set_pod_status(master, running())
    kube.set_pod_status(f"{run.run_id}-worker-0", running())
    kube.append_log(master, "before\n")
    wait_until(lambda: run.store.status(run.run_id).state.value == "Running", what="run Running")
    wait_until(lambda: run.logs("master", 0) == "before\n", what="the log stored")
    pid = follower_of(run)
    with kube.outage():
        assert wait_gone(pid) in (0, None)
        status = run.store.status(run.run_id)
        assert status.state.value == "Running" and status.reason == "LostContact"  # not Failed: it may still run
        assert status.message.startswith(f"lost contact with the Kubernetes API at {kube.url} for ")
        assert "starts following it again" in status.message
        assert status.supervisor_pid is None
        assert status.replica("master", 0).state.value == "Running"  # no answer is not "no pods"
        assert follower_pids(px_home) == []
    kube.append_log(master, "after\n")
    run.reconcile()  # the next look at the run starts a follower again
    (again,) = wait_until(lambda: follower_pids(px_home), what="a new follower")
    assert again != pid
    wait_until(lambda: run.store.status(run.run_id).reason != "LostContact", what="the new follower's status")
    kube.set_pod_status(master, terminated("Succeeded", 0, "Completed"))
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Succeeded"
    assert run.logs("master", 0) == "before\nafter\n"
    assert wait_gone(again) in (0, None)  # a finished run's follower ends by itself


def test_an_http_error_is_an_answer_a_refused_connection_is_not(tmp_path, monkeypatch):
    now = [100.0]
    contact = Contact(clock=lambda: now[0])
    monkeypatch.setenv("PX_K8S_CONFIG", str(tmp_path / "none.yaml"))
    with FakeKube() as fake:
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


def test_running_follower_ignores_a_dead_or_foreign_pid(kube, px_home):
    run = jupyter_px.submit("pass\n", TORCH)
    pid = follower_of(run)
    status = run.store.status(run.run_id)
    assert running_follower(status, run.paths.root) == pid
    (run.paths.root / "follower.pid").write_text("1")  # pid 1 is not this run's follower
    status.supervisor_pid = 1
    assert running_follower(status, run.paths.root) is None
