"""The follower: replica states from pod phases and container states, logs streamed into the
store (and resumed after the follower is killed, without lost or doubled lines), metrics parsed
from `@px-metrics` lines into the store and TensorBoard, Kubeflow job conditions, and stop."""

from __future__ import annotations

import json

import pytest
from k8s_support import (  # noqa: F401 (kube_fixture: the `kube` fixture)
    DEADLINE_S,
    kill,
    kube_fixture,
    running,
    started_followers,
    terminated,
    unschedulable,
    wait_until,
    waiting,
)

import jupyter_px
from jupyter_px.backends.kubernetes.pod_state import pod_replica
from jupyter_px.runstore import ReplicaState
from jupyter_px.runstore.metrics import MetricsReader

TORCH = {"framework": "pytorch", "backend": "native", "environment": {"replicas": {"n_workers": 1}}}


def replica(run, key):
    role, _, index = key.rpartition("-")
    return run.store.status(run.run_id).replica(role, int(index))


def wait_replica(run, key, state, reason=None, timeout=DEADLINE_S):
    def check():
        r = replica(run, key)
        return r.state.value == state and (reason is None or r.reason == reason)

    wait_until(check, timeout, f"{key} {state} {reason or ''}; now {replica(run, key)}")
    return replica(run, key)


def metric_line(step, loss):
    record = {"step": step, "time": 1700000000.0 + step, "metrics": {"loss": loss}}
    return "@px-metrics " + json.dumps(record) + "\n"


@pytest.mark.parametrize(
    ("status", "state", "reason"),
    [
        ({"phase": "Pending"}, "Pending", None),
        (unschedulable("0/3 nodes are available: 3 Insufficient nvidia.com/gpu."), "Pending", "Unschedulable"),
        (waiting("ContainerCreating"), "Pending", "ContainerCreating"),
        (waiting("ImagePullBackOff", 'Back-off pulling image "nope:1"'), "Pending", "ImagePullBackOff"),
        (running(), "Running", None),
        (waiting("CrashLoopBackOff", "back-off 10s", restarts=2, phase="Running"), "Restarting", "CrashLoopBackOff"),
        (terminated("Succeeded", 0, "Completed"), "Succeeded", "Completed"),
        (terminated("Failed", 137, "OOMKilled"), "Failed", "OOMKilled"),
        (terminated("Failed", 1, "Error"), "Failed", "Error"),
    ],
)
def test_pod_states(status, state, reason):
    view = pod_replica({"status": status}, "worker", 0)
    assert (view.state.value, view.reason) == (state, reason)


def test_follower_writes_states_logs_and_metrics(kube, px_home):
    run = jupyter_px.submit("pass\n", TORCH, name="follow")
    master, worker = f"{run.run_id}-master-0", f"{run.run_id}-worker-0"
    kube.set_pod_status(master, unschedulable("0/3 nodes are available: 3 Insufficient cpu."))
    r = wait_replica(run, "master-0", "Pending", "Unschedulable")
    assert "Insufficient cpu" in r.message
    kube.set_pod_status(worker, waiting("ImagePullBackOff", 'Back-off pulling image "x"'))
    wait_replica(run, "worker-0", "Pending", "ImagePullBackOff")
    kube.set_pod_status(master, running())
    kube.set_pod_status(worker, running())
    wait_until(lambda: run.store.status(run.run_id).state.value == "Running", what="run Running")
    kube.append_log(master, "starting\n" + metric_line(0, 1.0) + metric_line(1, 0.5))
    kube.append_log(worker, "worker says hi\n")
    wait_until(lambda: "loss" in (run.metrics().get("master-0") or {}), what="metrics in the store")
    assert list(run.metrics()["master-0"]["loss"].values) == [1.0, 0.5]
    kube.set_pod_status(worker, waiting("CrashLoopBackOff", "back-off", restarts=1, phase="Running"))
    r = wait_replica(run, "worker-0", "Restarting", "CrashLoopBackOff")
    assert r.restarts == 1
    kube.set_pod_status(worker, running(restarts=1))
    kube.append_log(master, "done\n")
    kube.set_pod_status(master, terminated("Succeeded", 0, "Completed"))
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Succeeded"
    assert run.logs("master", 0) == "starting\n" + metric_line(0, 1.0) + metric_line(1, 0.5) + "done\n"
    assert run.logs("worker", 0) == "worker says hi\n"
    assert replica(run, "worker-0").state.value == "Stopped"  # the run ended; its other pods were deleted
    assert not kube.list("pods")  # native: a finished run's pods are cleaned up, its logs are in the store
    events = list(run.paths.tensorboard("master", 0).glob("events.out.tfevents.*"))
    assert events  # TensorBoard sees the metrics too (files MetricsReader skips: the points are in JSONL)
    reader = MetricsReader(run.paths)
    reader.poll()
    assert list(reader.series("master-0", "loss").values) == [1.0, 0.5]


def test_failed_replica_fails_the_run_with_its_reason(kube, px_home):
    run = jupyter_px.submit("pass\n", TORCH)
    kube.set_pod_status(f"{run.run_id}-master-0", running())
    kube.append_log(f"{run.run_id}-worker-0", "Killed\n")
    kube.set_pod_status(f"{run.run_id}-worker-0", terminated("Failed", 137, "OOMKilled"))
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Failed" and "worker-0 failed (OOMKilled): exited with code 137" in status.message
    worker = status.replica("worker", 0)
    assert (worker.state, worker.reason, worker.exit_code) == (ReplicaState.FAILED, "OOMKilled", 137)
    assert run.logs("worker", 0) == "Killed\n"


def test_killed_follower_resumes_without_lost_or_doubled_lines(kube, px_home):
    run = jupyter_px.submit("pass\n", TORCH)
    master = f"{run.run_id}-master-0"
    kube.set_pod_status(master, running())
    kube.append_log(master, "".join(f"line {i}\n" for i in range(50)) + metric_line(1, 3.0))
    wait_until(lambda: run.logs("master", 0).count("\n") == 51, what="first lines")
    kill(run.store.status(run.run_id).owner.pid)  # returns once the process is gone
    assert started_followers() == []
    kube.append_log(master, "".join(f"line {i}\n" for i in range(50, 80)) + metric_line(2, 2.0))
    backend = run.backend
    restarted = backend.follow(run.run_id)
    assert restarted is not None
    assert backend.follow(run.run_id) is None  # the one just started is known, even before it writes
    assert started_followers() == [restarted]
    wait_until(lambda: run.logs("master", 0).count("\n") >= 82, what="resumed lines")
    kube.set_pod_status(master, terminated("Succeeded", 0, "Completed"))
    run.wait(timeout=DEADLINE_S)
    lines = run.logs("master", 0).splitlines()
    assert [x for x in lines if x.startswith("line")] == [f"line {i}" for i in range(80)]
    assert list(run.metrics()["master-0"]["loss"].values) == [3.0, 2.0]


def test_kubeflow_job_conditions_decide_the_run(kube, px_home):
    topology = {"framework": "tensorflow", "backend": "kubeflow", "environment": {"replicas": {"n_workers": 1}}}
    run = jupyter_px.submit("pass\n", topology)
    name = kube.list("tfjobs")[0]["metadata"]["name"]
    # the operator's pods: our template labels plus its replica index
    pod = {
        "metadata": {
            "name": f"{name}-worker-0",
            "labels": {
                "px.jupyter.org/run": name,
                "px.jupyter.org/role": "worker",
                "training.kubeflow.org/replica-index": "0",
            },
        },
        "spec": {"containers": [{"name": "tensorflow", "image": "x"}]},
    }
    import os

    import kubernetes

    core = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(config_file=os.environ["KUBECONFIG"]))
    core.create_namespaced_pod("default", pod)
    kube.set_pod_status(f"{name}-worker-0", running(container="tensorflow"))
    wait_replica(run, "worker-0", "Running")
    kube.append_log(f"{name}-worker-0", "tf worker\n")
    kube.set_status("tfjobs", name, {"conditions": [{"type": "Running", "status": "True"}]})
    kube.set_pod_status(f"{name}-worker-0", terminated("Succeeded", 0, "Completed", container="tensorflow"))
    wait_replica(run, "worker-0", "Succeeded")  # the follower has seen the pod end...
    assert run.store.status(run.run_id).state.value == "Running"  # ...but the job, not a pod, decides
    kube.set_status(
        "tfjobs", name, {"conditions": [{"type": "Succeeded", "status": "True", "reason": "TFJobSucceeded"}]}
    )
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Succeeded" and status.reason == "TFJobSucceeded"
    assert run.logs("worker", 0) == "tf worker\n"


def test_stop_keeps_the_logs(kube, px_home):
    run = jupyter_px.submit("pass\n", TORCH)
    master = f"{run.run_id}-master-0"
    kube.set_pod_status(master, running())
    kube.append_log(master, "before stop\n")
    wait_until(lambda: run.logs("master", 0) == "before stop\n", what="log")
    status = run.stop()
    assert (status.state.value, status.reason) == ("Stopped", "StoppedByUser")
    assert {r.state.value for r in status.replicas} == {"Stopped"}
    assert not kube.list("pods") and not kube.list("configmaps")
    assert run.logs("master", 0) == "before stop\n"
