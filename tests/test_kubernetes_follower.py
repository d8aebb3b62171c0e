"""The follower: replica states from pod phases and container states, logs streamed into the
store (and resumed after the follower is killed, without lost or doubled lines), metrics parsed
from `@px-metrics` lines into the store and TensorBoard, Kubeflow job conditions, and stop.

On the simulated cluster: the training code really runs in the pods (the kubelet's processes),
prints its lines and metrics and exits as it likes; the scheduler, the kubelet and the training
operator write every state. The test only decides when a replica goes on (`wait_for_file`) and,
for what no process can produce here (an image the node cannot pull), uses the kubelet's API."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from kubernetes_support import (  # noqa: F401 (kube_fixture: the `kube` fixture)
    DEADLINE_S,
    kill,
    kube_fixture,
    running,
    started_followers,
    terminated,
    unschedulable,
    wait_for,
    wait_for_file,
    waiting,
)

import jupyter_px
from jupyter_px.backends.kubernetes.shared.pod_state import pod_replica
from jupyter_px.runstore import ReplicaState
from jupyter_px.runstore.metrics import MetricsReader

TORCH = {"framework": "pytorch", "backend": "native", "environment": {"replicas": {"n_workers": 1}}}


def replica(run, key):
    role, _, index = key.rpartition("-")
    return run.status().replica(role, int(index))


def wait_replica(run, key, state, reason=None, timeout=DEADLINE_S):
    def check():
        r = replica(run, key)
        return r.state.value == state and (reason is None or r.reason == reason)

    wait_for(check, f"{key} {state} {reason or ''}; now {replica(run, key)}", timeout)
    return replica(run, key)


def metric_line(step, loss):
    record = {"step": step, "time": 1700000000.0 + step, "metrics": {"loss": loss}}
    return "@px-metrics " + json.dumps(record) + "\n"


def prints(text: str) -> str:
    """Python source that prints `text` as it is (flushed: the kubelet logs what the process wrote)."""
    return f"import sys\nsys.stdout.write({text!r})\nsys.stdout.flush()\n"


def by_role(**code: str) -> str:
    """Training code that runs `code[role]` in each role's pods (PX_TASK_TYPE says which)."""
    out = "import os\nrole = os.environ['PX_TASK_TYPE']\n"
    for role, text in code.items():
        out += f"if role == {role!r}:\n" + "".join(f"    {line}\n" for line in text.splitlines())
    return out


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
        # OnFailure: failed, and not started again yet (the kubelet's first restart is at once)
        (terminated("Running", 137, "OOMKilled"), "Restarting", "OOMKilled"),
        (
            {
                **waiting("ContainerCreating", phase="Running"),
                "containerStatuses": [
                    {
                        "name": "replica",
                        "restartCount": 0,
                        "state": {"waiting": {"reason": "ContainerCreating"}},
                        "lastState": {"terminated": {"exitCode": 137, "reason": "Error"}},
                    }
                ],
            },
            "Restarting",
            "ContainerCreating",
        ),
        (terminated("Failed", 137, "OOMKilled"), "Failed", "OOMKilled"),
        (terminated("Failed", 1, "Error"), "Failed", "Error"),
    ],
)
def test_pod_states(status, state, reason):
    view = pod_replica({"status": status}, "worker", 0)
    assert (view.state.value, view.reason) == (state, reason)


def test_pending_reasons_come_from_the_scheduler_and_the_kubelet(kube, px_home):
    """A master asking for more CPU than the node has is Unschedulable with the scheduler's
    message; a worker whose image the node cannot pull waits in ImagePullBackOff, and starts once
    the image can be pulled."""
    kube.kubelet.refuse_image("registry.example/nope:1")
    topology = {
        "framework": "pytorch",
        "backend": "native",
        "environment": {
            "resources": {"cpu": {"requests": 64}},
            "replicas": {"n_workers": 1, "default_worker": {"image": "registry.example/nope:1"}},
        },
    }
    run = jupyter_px.submit("import time\ntime.sleep(600)\n", topology, name="pending")
    r = wait_replica(run, "master-0", "Pending", "Unschedulable")
    assert "Insufficient cpu" in r.message
    r = wait_replica(run, "worker-0", "Pending", "ImagePullBackOff")
    assert 'Back-off pulling image "registry.example/nope:1"' in r.message
    kube.kubelet.allow_image("registry.example/nope:1")
    wait_replica(run, "worker-0", "Running")
    run.stop()


def test_follower_writes_states_logs_and_metrics(kube, px_home, tmp_path):
    """The master prints and reports metrics, then waits; worker-0 (restart policy OnFailure)
    fails (once the follower has seen it run) and fails again at once, so the kubelet restarts it
    at once and then backs off (CrashLoopBackOff), and it runs on the third start; the master
    ends the run."""
    kube.kubelet.backoff_base = 6.0  # long enough for the back-off to be seen
    tries, fail, finish = tmp_path / "tries", tmp_path / "fail", tmp_path / "finish"
    worker = (
        f"tries = open({str(tries)!r}, 'a+')\ntries.write('x')\ntries.seek(0)\ntries = len(tries.read())\n"
        "print('worker says hi', flush=True)\n"
        "if tries == 1:\n"
        + "".join(f"    {line}\n" for line in wait_for_file(fail).splitlines())
        + "if tries < 3:\n    raise SystemExit(1)\n"
        "import time\ntime.sleep(600)\n"
    )
    master = prints("starting\n" + metric_line(0, 1.0) + metric_line(1, 0.5)) + wait_for_file(finish) + prints("done\n")
    topology = {
        "framework": "pytorch",
        "backend": "native",
        "environment": {
            "replicas": {"n_workers": 1, "worker": [{"index": 0, "restart_policy": "OnFailure", "max_restarts": 5}]}
        },
    }
    run = jupyter_px.submit(by_role(master=master, worker=worker), topology, name="follow")
    wait_replica(run, "worker-0", "Running")
    fail.touch()
    r = wait_replica(run, "worker-0", "Restarting", "CrashLoopBackOff")
    assert r.restarts == 1 and "back-off 6s restarting failed container=replica" in r.message
    wait_replica(run, "worker-0", "Running")
    wait_for(lambda: replica(run, "worker-0").restarts == 2, what="the third start recorded")
    wait_for(lambda: len((run.metrics().get("master-0") or {}).get("loss", ())) == 2, what="metrics stored")
    assert list(run.metrics()["master-0"]["loss"].values) == [1.0, 0.5]
    wait_for(lambda: run.status().state.value == "Running", what="run Running")
    finish.touch()
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Succeeded"
    assert run.logs("master", 0) == "starting\n" + metric_line(0, 1.0) + metric_line(1, 0.5) + "done\n"
    assert "worker says hi\n" in run.logs("worker", 0)
    assert replica(run, "worker-0").state.value == "Stopped"  # the run ended; its other pods were deleted
    wait_for(lambda: not kube.list("pods"), what="the finished run's pods deleted")  # logs are in the store
    events = list(run.paths.tensorboard("master", 0).glob("events.out.tfevents.*"))
    assert events  # TensorBoard sees the metrics too (files MetricsReader skips: the points are in JSONL)
    reader = MetricsReader(run.paths)
    reader.poll()
    assert list(reader.series("master-0", "loss").values) == [1.0, 0.5]


def test_failed_replica_fails_the_run_with_its_reason(kube, px_home):
    """A worker over its memory limit is killed by the kubelet: OOMKilled, exit 137."""
    worker = "print('allocating', flush=True)\nhog = b'x' * (600 << 20)\nimport time\ntime.sleep(600)\n"
    topology = {
        "framework": "pytorch",
        "backend": "native",
        "environment": {"replicas": {"n_workers": 1, "default_worker": {"resources": {"memory": {"limits": 300}}}}},
    }
    run = jupyter_px.submit(by_role(master="import time\ntime.sleep(600)\n", worker=worker), topology)
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Failed" and "worker-0 failed (OOMKilled): exited with code 137" in status.message
    worker_status = status.replica("worker", 0)
    assert (worker_status.state, worker_status.reason, worker_status.exit_code) == (
        ReplicaState.FAILED,
        "OOMKilled",
        137,
    )
    assert run.logs("worker", 0) == "allocating\n"


def test_killed_follower_resumes_without_lost_or_doubled_lines(kube, px_home, tmp_path):
    go, end = tmp_path / "go", tmp_path / "end"
    code = (
        prints("".join(f"line {i}\n" for i in range(50)) + metric_line(1, 3.0))
        + wait_for_file(go)
        + prints("".join(f"line {i}\n" for i in range(50, 80)) + metric_line(2, 2.0))
        + wait_for_file(end)
    )
    run = jupyter_px.submit(code, {**TORCH, "environment": {"replicas": {"n_workers": 0}}})
    wait_for(lambda: run.logs("master", 0).count("\n") == 51, what="first lines")
    kill(run.status().owner.pid)  # returns once the process is gone
    assert started_followers() == []
    go.touch()  # printed while nobody follows
    wait_for(lambda: "line 79" in kube_log(kube, run), what="the pod to print the rest")
    backend = run.backend
    restarted = backend.follow(run.run_id)
    assert restarted is not None
    assert backend.follow(run.run_id) is None  # the one just started is known, even before it writes
    assert started_followers() == [restarted]
    wait_for(lambda: run.logs("master", 0).count("\n") >= 82, what="resumed lines")
    end.touch()
    run.wait(timeout=DEADLINE_S)
    lines = run.logs("master", 0).splitlines()
    assert [x for x in lines if x.startswith("line")] == [f"line {i}" for i in range(80)]
    assert list(run.metrics()["master-0"]["loss"].values) == [3.0, 2.0]


def kube_log(kube, run) -> str:
    """What the kubelet serves of the master's log now."""
    pod = kube.get("pods", f"{run.run_id}-master-0")
    return b"".join(kube.api.log_source(pod, "replica", {})).decode() if pod else ""


def test_kubeflow_job_conditions_decide_the_run(kube, px_home, tmp_path):
    """A TFJob with a chief succeeds when the chief does (training-operator's TFJob status rule):
    a worker that has succeeded alone leaves the run Running; the operator's condition decides."""
    finish = tmp_path / "finish"
    topology = {"framework": "tensorflow", "backend": "kubeflow", "environment": {"replicas": {"n_workers": 1}}}
    code = by_role(master=wait_for_file(finish), worker="print('tf worker', flush=True)\n")
    run = jupyter_px.submit(code, topology)
    wait_replica(run, "worker-0", "Succeeded")  # the follower has seen the pod end...
    (job,) = kube.list("tfjobs")
    assert not any(c["type"] == "Succeeded" for c in job["status"].get("conditions") or [])
    assert run.status().state.value == "Running"  # ...but the job, not a pod, decides
    finish.touch()
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Succeeded" and status.reason == "TFJobSucceeded"
    assert run.logs("worker", 0) == "tf worker\n"


def test_stop_keeps_the_logs(kube, px_home):
    run = jupyter_px.submit(prints("before stop\n") + "import time\ntime.sleep(600)\n", TORCH)
    wait_for(lambda: run.logs("master", 0) == "before stop\n", what="log")
    status = run.stop()
    assert (status.state.value, status.reason) == ("Stopped", "StoppedByUser")
    assert {r.state.value for r in status.replicas} == {"Stopped"}
    assert not kube.list("pods") and not kube.list("configmaps")
    assert run.logs("master", 0) == "before stop\n"


def test_the_follower_process_declines_the_manifest_validator_the_client_would_import():
    """kubernetes-validate is installed here (the simulated API server uses it); the client's
    package imports it (and jsonschema with it) whenever it is, for a `validate` no follower calls:
    the follower's entry declines it, and still has the client (`__main__.py`'s docstring)."""
    probe = (
        "import sys\n"
        "from jupyter_px.backends.kubernetes.follower.__main__ import main\n"
        "assert main(['not-a-run-directory']) == 2\n"
        "from kubernetes.dynamic import client\n"
        "print(sorted(m for m in ('kubernetes', 'kubernetes_validate', 'jsonschema') if sys.modules.get(m)),"
        " client.HAS_KUBERNETES_VALIDATE)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["['kubernetes']", "False"], done.stdout
    __import__("kubernetes_validate")  # installed: the decline, not its absence, did it
