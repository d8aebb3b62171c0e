"""A create whose answer is lost (the object made, the client told it failed) is rolled back by
the run's label, not only by the names answers returned; a run whose rollback cannot be
confirmed is kept, Failed, saying what may remain, and `stop` deletes it."""

from __future__ import annotations

import pytest
from kubernetes_support import kube_fixture  # noqa: F401 (the `kube` fixture)

import jupyter_px
from jupyter_px.api import Run
from jupyter_px.backends import BackendError
from jupyter_px.backends.kubernetes.shared.create import CREATE_ATTEMPTS
from jupyter_px.runstore import RunStore

TORCH = {"framework": "pytorch", "backend": "native", "environment": {"replicas": {"n_workers": 2}}}
#: A failure that passes (5xx) is retried before any rollback: these fail every try from then on.
EVERY_TRY = 100 * CREATE_ATTEMPTS


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch):
    monkeypatch.setattr("jupyter_px.backends.kubernetes.shared.create.BACKOFF_START_S", 0.01)


def everything(kube) -> list[str]:
    return [
        f"{plural}/{obj['metadata']['name']}"
        for plural in ("configmaps", "pods", "services")
        for obj in kube.list(plural)
    ]


@pytest.mark.pods_stay_pending
def test_a_lost_configmap_answer_leaves_nothing_on_the_cluster(kube, px_home):
    kube.fail("POST", "configmaps", 504, "Timeout", "the gateway timed out", lost=True, times=EVERY_TRY)
    with pytest.raises(BackendError) as error:
        jupyter_px.submit("pass\n", TORCH, name="lost")
    assert "504" in str(error.value) and "nothing of the run was left" in str(error.value)
    assert everything(kube) == []  # the ConfigMap (the code) was made, and deleted again by label
    assert RunStore(px_home).run_ids() == []  # confirmed: nothing to keep the record for


@pytest.mark.pods_stay_pending
def test_a_lost_pod_answer_is_deleted_with_the_rest(kube, px_home):
    kube.fail("POST", "pods", 500, "InternalError", "etcd timeout", nth=2, lost=True, times=EVERY_TRY)
    with pytest.raises(BackendError) as error:
        jupyter_px.submit("pass\n", TORCH, name="lostpod")
    assert "nothing of the run was left" in str(error.value)
    assert everything(kube) == []
    assert RunStore(px_home).run_ids() == []


@pytest.mark.pods_stay_pending
def test_an_unconfirmed_rollback_keeps_the_run_until_stop_deletes_what_is_left(kube, px_home):
    from jupyter_px.backends import RunLeftBehind

    kube.fail("POST", "configmaps", 504, "Timeout", "the gateway timed out", lost=True, times=EVERY_TRY)
    kube.fail("DELETE", "configmaps", 500, "InternalError", "etcd is unavailable")
    with pytest.raises(RunLeftBehind) as error:
        jupyter_px.submit("pass\n", TORCH, name="kept")
    (configmap,) = kube.list("configmaps")
    assert "could not be confirmed" in str(error.value) and "kubectl delete" in str(error.value)
    store = RunStore(px_home)
    (run_id,) = store.run_ids()  # kept: nothing else knows the ConfigMap is there
    status = store.status(run_id)
    assert status.state.value == "Failed" and status.reason == "RollbackUnconfirmed"
    assert f"ConfigMap {configmap['metadata']['name']}" in status.message
    assert f"jupyter px stop {run_id}" in status.message

    Run(run_id).stop()  # the API server answers again: the leftovers go
    assert everything(kube) == []
    status = store.status(run_id)
    assert status.state.value == "Failed" and "nothing of the run is left on the cluster" in status.message
