"""TensorFlow warm, without fork: the spawn-ahead pool of the TensorFlow template (docs/warm.md).

Real runs throughout: the template, its standby's pool of interpreters that imported TensorFlow,
the supervisor handing each replica to one of them, the runner. A run sizes the next pool (one
interpreter per replica it had, each with that replica's environment at import); the next run's
replicas are served by it, compute what a cold run computes, and each interpreter serves one
replica only; a changed environment is never served by the old pool; a stop kills a pool-served
replica as it kills a cold one.
"""

from __future__ import annotations

import os

import psutil
import pytest
from local_support import describe, submit, wait
from waiting import wait_for
from warm_support import template_env
from workloads_support import DEADLINE_S, check_run
from workloads_support import submit as submit_workload

from jupyter_px.backends.local import templates, warm
from jupyter_px.backends.local.settings import load_settings
from jupyter_px.runstore import RunRecord
from jupyter_px.service import RunService
from jupyter_px.topology import parse_topology

pytestmark = pytest.mark.jobs

TF_TWO = {"framework": "tensorflow", "environment": {"replicas": {"n_workers": 1}}}


@pytest.fixture
def tf_template(px_home, tmp_path, monkeypatch):
    """A TensorFlow template of this test's own (its own warm directory), ready, pool still empty."""
    monkeypatch.setenv("JUPYTER_PX_WARM_DIR", str(tmp_path / "warm"))
    monkeypatch.setenv("JUPYTER_PX_WARM", "1")
    state = warm.start("tensorflow", template_env(), load_settings(), timeout=300)
    yield state
    warm.stop_all("the test ended")


def _pool() -> dict:
    (entry,) = [e for e in templates.templates() if e["key"] == warm.template_key("tensorflow") and e["running"]]
    return entry["pool"]


def _ready_pool(size: int) -> list[int]:
    """The pids of the pool's interpreters once `size` of them have imported."""

    def ready():
        members = _pool()["interpreters"]
        return len(members) == size and all(m["state"] == "ready" for m in members) and [m["pid"] for m in members]

    return wait_for(ready, timeout=DEADLINE_S, what=f"a pool of {size} ready interpreters")


def _gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_tensorflow_job_runs_from_the_pool_with_the_cold_runs_loss_each_interpreter_once(tf_template):
    """A cold run (the reference loss) sizes the pool: two interpreters, each with its replica's
    environment at import (the thread counts, and TF_CPP_MIN_LOG_LEVEL, which tf_mwms.py sets
    before it imports TensorFlow). The next run's replicas are those interpreters, its loss is
    the cold run's; they are gone with the run, and the next pool is new ones."""
    assert _pool()["interpreters"] == []  # nothing said its size yet
    service = RunService()
    cold_id = submit_workload(service, "tf_mwms", "local", workers=1, cold=True)
    service.wait(cold_id, timeout=DEADLINE_S)
    assert service.status(cold_id).launch == "cold: asked for (--cold)"
    cold_loss = check_run(service, cold_id, "tf_mwms")

    pool = _ready_pool(2)
    hint = _pool()["members"]
    assert all(member.get("TF_CPP_MIN_LOG_LEVEL") == "2" and "OMP_NUM_THREADS" in member for member in hint), hint
    assert "tf_keras" in _pool()["imports"]

    warm_id = submit_workload(service, "tf_mwms", "local", workers=1)
    service.wait(warm_id, timeout=DEADLINE_S)
    status = service.status(warm_id)
    assert status.launch.startswith(f"warm (template pid {tf_template['pid']})"), status.launch
    assert status.launch.endswith("spawn-ahead: 2 of 2 replicas from its pool"), status.launch
    served = {replica.pid for replica in status.replicas}
    assert served == set(pool), (served, pool)  # the replicas are the pool's interpreters
    for replica in status.replicas:
        assert replica.launch == f"spawn-ahead (pool interpreter pid {replica.pid})"
    check_run(service, warm_id, "tf_mwms", expected=cold_loss)  # as tests/test_workloads.py checks a run

    assert all(_gone(pid) for pid in pool)  # each served one replica, and ended with it
    replaced = _ready_pool(2)
    assert not set(replaced) & set(pool)


_SLEEPS = """\
import os, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # no Keras 3 imported with TensorFlow: 1-2 s of CPU
import tensorflow as tf
print("imported", tf.__version__, os.getpid(), flush=True)
time.sleep(float(os.environ.get("SLEEP_S", "0")))
"""


def test_stop_kills_a_pool_served_replica_and_a_changed_environment_is_not_served_by_the_old_pool(
    tf_template, tmp_path, monkeypatch
):
    script = tmp_path / "sleeps.py"
    script.write_text(_SLEEPS)
    first = submit(str(script), TF_TWO, cold=True)
    assert wait(first).state.value == "Succeeded", describe(first)
    pool = _ready_pool(2)

    monkeypatch.setenv("SLEEP_S", "600")  # not read at import: the same pool serves it
    run = submit(str(script), TF_TWO)

    def all_running():
        status = run.status()
        return all(r.state.value == "Running" for r in status.replicas) and status

    running = wait_for(all_running, timeout=60, what="both replicas running")
    assert {r.pid for r in running.replicas} == set(pool), describe(run)
    wait_for(lambda: all("imported" in run.logs(r.role, r.index) for r in running.replicas), timeout=60)
    groups = {r.pid: os.getpgid(r.pid) for r in running.replicas}
    assert all(pgid == pid for pid, pgid in groups.items())  # each leads its own group, as a cold one
    run.stop()
    stopped = run.status()
    assert stopped.state.value == "Stopped", describe(run)
    for replica in stopped.replicas:
        assert replica.state.value == "Stopped" and replica.reason == "StoppedByUser", describe(run)
        assert replica.launch.startswith("spawn-ahead")
        assert _gone(replica.pid)
        with pytest.raises(ProcessLookupError):
            os.killpg(replica.pid, 0)

    # a new package directory on PYTHONPATH: the fingerprint differs, the template and its pool go
    replaced = _ready_pool(2)
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "helper.py").write_text("X = 1\n")
    changed = {**template_env(), "PYTHONPATH": os.pathsep.join([str(extra), template_env().get("PYTHONPATH", "")])}
    record = RunRecord(run_id="x", topology=TF_TWO)
    chosen = warm.plan(record, parse_topology(TF_TWO), changed, load_settings())
    assert not chosen.warm and chosen.launch.startswith("cold: the environment changed since the template started")
    assert f"packages in {extra}" in chosen.launch
    wait_for(lambda: all(_gone(pid) for pid in [tf_template["pid"], *replaced]), timeout=60, what="the old pool gone")
    new = warm.start("tensorflow", changed, load_settings(), timeout=300)  # the one that serves it
    assert new["pid"] != tf_template["pid"] and new["fingerprint"] == warm.fingerprint("tensorflow", changed)
