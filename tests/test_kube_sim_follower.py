"""The Kubernetes follower on the simulated cluster: logs that survive rotation, reconnects and
restarts; replica states from the right container; deletions, evictions and lost nodes recorded
for what they are; refusals that end the follow with a reason; the MPI launcher followed.

Runs are created through the backends and the simulated controllers and kubelet act; what a
process cannot produce (eviction, a lost node) goes through the kubelet's API. The training code
waits for files the test writes into its working directory (its emptyDir, on this machine), so
each test decides when a pod moves on, not the machine's load."""

from __future__ import annotations

import collections
import time
from pathlib import Path

import pytest
from kube_sim import Cluster
from kube_sim_support import backend_cluster, wait_for
from kubernetes_support import DEADLINE_S, stop_followers

import jupyter_px
from jupyter_px.backends.kubernetes.follower.log_sink import LineReader, Position, parse_stamp
from jupyter_px.runstore.metrics import MetricsReader

pytestmark = pytest.mark.kube

WAIT_FOR_FILE = (
    "import pathlib, time\ndef wait(name):\n    while not pathlib.Path(name).exists():\n        time.sleep(0.05)\n"
)
LINE = "print(f'line {i:05d} ' + 'x' * 40)\n"


@pytest.fixture(name="sim")
def sim_fixture(tmp_path, monkeypatch, px_home):
    with backend_cluster(tmp_path, monkeypatch, px_home, namespaces=("default",)) as cluster:
        yield cluster


def native(n_workers: int = 0, **environment) -> dict:
    return {
        "framework": "pytorch",
        "backend": "native",
        "environment": {"replicas": {"n_workers": n_workers}, **environment},
    }


def pod_of(sim, role: str, index: int) -> dict:
    return wait_for(
        lambda: next((p for p in sim.list("pods") if p["metadata"]["name"].endswith(f"-{role}-{index}")), None),
        f"the pod of {role}-{index}",
    )


def work_dir(sim, pod: dict) -> Path:
    """The pod's working directory (its `px-work` emptyDir) as the simulated kubelet made it."""
    return sim.kubelet.root / "pods" / pod["metadata"]["uid"] / "volumes" / "px-work"


def touch(sim, role: str, index: int, name: str) -> None:
    (work_dir(sim, pod_of(sim, role, index)) / name).write_text("go")


def stored(run, role="master", index=0) -> str:
    return run.logs(role, index, tail=None)


def numbered(run, role="master", index=0) -> list[str]:
    return [line for line in stored(run, role, index).splitlines() if line.startswith("line ")]


def phase(sim, role: str, index: int) -> str | None:
    pod = sim.get("pods", pod_of(sim, role, index)["metadata"]["name"])
    return (pod or {}).get("status", {}).get("phase")


def replica(run, role="master", index=0):
    return run.status().replica(role, index)


# ---- logs ------------------------------------------------------------------------------------


def test_a_reconnect_after_rotation_loses_and_doubles_no_line(sim, px_home):
    """The kubelet serves only the newest log file: after the connection is cut and the log
    rotated, a follower that skips "the lines it has" counts from the wrong start and drops what
    came meanwhile; resuming by time keeps every line once."""
    sim.kubelet.log_max_bytes = 32 * 1024  # phase one rotates once; phase two fits in the new file
    code = (
        WAIT_FOR_FILE
        + "print('ready', flush=True)\nwait('go1')\n"
        + "for i in range(600):\n    "
        + LINE
        + "print('phase one done', flush=True)\nwait('go2')\n"
        + "for i in range(600, 650):\n    "
        + LINE
    )
    run = jupyter_px.submit(code, native())
    wait_for(lambda: "ready" in stored(run), "the follower to stream the log")
    touch(sim, "master", 0, "go1")
    wait_for(lambda: "phase one done" in stored(run), "phase one in the store")
    with sim.outage():  # every connection cut; the pod goes on and ends meanwhile
        touch(sim, "master", 0, "go2")
        wait_for(lambda: phase(sim, "master", 0) == "Succeeded", "the pod to end")
    assert run.wait(timeout=DEADLINE_S).state.value == "Succeeded"
    lines = numbered(run)
    assert lines == [f"line {i:05d} " + "x" * 40 for i in range(650)], (len(lines), lines[-3:])


def test_the_attempt_before_a_restart_is_read_to_its_end(sim, px_home):
    """A container that crashes and is restarted while the follower cannot read it: its last
    lines are in the previous instance's log (`previous=true`), which is read first."""
    code = (
        WAIT_FOR_FILE
        + "marker = pathlib.Path('attempted')\nfirst = not marker.exists()\nmarker.write_text('1')\n"
        + "print('attempt', 'one' if first else 'two', flush=True)\n"
        + "if first:\n    wait('go')\n    for i in range(50):\n        "
        + LINE
        + "    raise SystemExit(3)\n"
        + "print('attempt two done')\n"
    )
    run = jupyter_px.submit(code, native(restart_policy="OnFailure", max_restarts=2))
    wait_for(lambda: "attempt one" in stored(run), "attempt one streamed")
    with sim.outage():
        touch(sim, "master", 0, "go")
        wait_for(lambda: phase(sim, "master", 0) == "Succeeded", "the restarted pod to succeed")
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Succeeded", status
    text = stored(run)
    assert numbered(run) == [f"line {i:05d} " + "x" * 40 for i in range(50)]
    assert text.index("line 00049") < text.index("attempt two done")
    assert text.count("attempt one") == 1 and text.count("attempt two done") == 1


def test_a_line_cut_by_a_disconnect_is_completed_not_stored_as_two():
    """A stream cut mid-line leaves the piece unread; the next stream (resumed by time) gives the
    line whole, and lines already stored at that instant are skipped."""
    first = LineReader(Position("uid/0"))
    got = first.feed(b"2026-01-02T03:04:05.1Z one\n2026-01-02T03:04:05.1Z two\n2026-01-02T03:04:06Z thr")
    assert [text for _, text in got] == [b"one\n", b"two\n"]  # 'thr' waits for its newline
    position = Position("uid/0", last=parse_stamp("2026-01-02T03:04:05.1Z"), at_last=2)
    again = LineReader(position)  # the server sends from the whole second, inclusive
    got = again.feed(b"2026-01-02T03:04:05.1Z one\n2026-01-02T03:04:05.1Z two\n2026-01-02T03:04:06Z three\n")
    assert [text for _, text in got] == [b"three\n"]
    assert parse_stamp("2026-01-02T03:04:05.100000000Z") == parse_stamp("2026-01-02T03:04:05.1Z")


# ---- which container is the replica ----------------------------------------------------------


def inject_istio_proxy(operation, resource, obj, old) -> None:
    """Stands in for Istio's sidecar injector (a mutating webhook): an ordinary container named
    `istio-proxy` that never exits, added to every pod of a run."""
    if (
        operation != "CREATE"
        or resource.plural != "pods"
        or "px.jupyter.org/run" not in obj["metadata"].get("labels", {})
    ):
        return
    proxy = {
        "name": "istio-proxy",
        "image": "istio/proxyv2:1.24",
        "command": ["python3", "-c", "import time; time.sleep(3600)"],
    }
    obj["spec"]["containers"].append(proxy)


def test_a_failed_replica_with_an_istio_sidecar_fails_the_run(sim, px_home):
    """The kubelet sorts container statuses by name, so `istio-proxy` comes first; the pod stays
    Running while it runs. The replica is its own container: exit 3 is a failure."""
    sim.api.admission.append(inject_istio_proxy)
    run = jupyter_px.submit("print('bad', flush=True)\nraise SystemExit(3)\n", native())
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Failed", status
    master = status.replica("master", 0)
    assert (master.state.value, master.exit_code) == ("Failed", 3), master
    assert "bad" in stored(run)


def test_a_finished_replica_with_a_sidecar_ends_the_run(sim, px_home):
    """Once the main container has exited 0, a sidecar that never exits does not keep the run
    alive: the run succeeds, and its pods are removed. (One replica: with a worker beside it, the
    master's end decides the run, and a worker whose container had not yet ended on a loaded
    machine was Stopped, as the success policy says.)"""
    sim.api.admission.append(inject_istio_proxy)
    run = jupyter_px.submit("print('fine', flush=True)\n", native())
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Succeeded", status
    assert [r.state.value for r in status.replicas] == ["Succeeded"], status.replicas
    wait_for(lambda: not sim.list("pods"), "the run's pods to be deleted")


# ---- deletions, evictions, lost nodes ---------------------------------------------------------


SLEEPER = "import time\nprint('up', flush=True)\ntime.sleep(600)\n"


def test_a_stop_records_every_replica_stopped_not_failed_143(sim, px_home):
    run = jupyter_px.submit(SLEEPER, native(1))
    wait_for(lambda: "up" in stored(run) and "up" in stored(run, "worker", 0), "both replicas up")
    status = run.stop()
    assert status.state.value == "Stopped", status
    status = wait_for(
        lambda: (s := run.status()).owner is None and s,
        "the follower to write the final status",
    )
    for r in status.replicas:
        assert (r.state.value, r.reason) == ("Stopped", "StoppedByUser"), r


def test_a_pod_deleted_by_someone_else_fails_its_native_run(sim, px_home):
    run = jupyter_px.submit(SLEEPER, native(1))
    wait_for(lambda: "up" in stored(run, "worker", 0), "the worker up")
    name = pod_of(sim, "worker", 0)["metadata"]["name"]
    sim.api.delete(sim.api.resource("", "v1", "pods"), "default", name)  # kubectl delete pod
    status = run.wait(timeout=DEADLINE_S)
    assert (status.state.value, status.reason) == ("Failed", "ReplicaFailed"), status
    worker = status.replica("worker", 0)
    assert (worker.state.value, worker.reason) == ("Failed", "PodDeleted"), worker
    master = status.replica("master", 0)
    assert (master.state.value, master.reason) == ("Stopped", "StoppedByRun"), master


def test_an_evicted_replica_fails_the_run_with_the_reason(sim, px_home):
    run = jupyter_px.submit(SLEEPER, native(1))
    wait_for(lambda: "up" in stored(run, "worker", 0), "the worker up")
    sim.kubelet.evict("default", pod_of(sim, "worker", 0)["metadata"]["name"])
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Failed", status
    worker = status.replica("worker", 0)
    assert (worker.state.value, worker.reason) == ("Failed", "Evicted"), worker
    assert "low on resource: memory" in worker.message


def test_a_master_on_a_lost_node_does_not_hang_the_run(sim, px_home):
    """The node stops answering: its pods keep their last phase (Running) forever. The replica
    fails with NodeLost and the run decides, on the kubeflow backend too (its operator never
    hears of the pods ending)."""
    topology = {"framework": "pytorch", "backend": "kubeflow", "environment": {"replicas": {"n_workers": 1}}}
    run = jupyter_px.submit(SLEEPER, topology)
    wait_for(lambda: "up" in stored(run), "the master up")
    sim.kubelet.lose_node()
    status = run.wait(timeout=DEADLINE_S)
    assert (status.state.value, status.reason) == ("Failed", "ReplicaFailed"), status
    assert status.replica("master", 0).reason == "NodeLost"
    assert "stopped answering" in status.message


def test_the_operators_cleanup_after_success_is_no_loss(sim, px_home, monkeypatch):
    """cleanPodPolicy All: the operator deletes the job's pods once it Succeeded; the run stays
    Succeeded and no replica reads Lost or PodDeleted."""
    monkeypatch.setenv("PX_K8S_CLEAN_POD_POLICY", "All")
    topology = {"framework": "pytorch", "backend": "kubeflow", "environment": {"replicas": {"n_workers": 1}}}
    code = WAIT_FOR_FILE + (
        "import os\nprint('done', flush=True)\n"
        "wait('go') if os.environ['PX_TASK_TYPE'] == 'master' else time.sleep(600)\n"
    )
    run = jupyter_px.submit(code, topology)
    wait_for(lambda: "done" in stored(run), "the master's log")
    touch(sim, "master", 0, "go")
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Succeeded", status
    wait_for(lambda: not sim.list("pods"), "the operator's cleanup")
    time.sleep(1.0)
    status = run.status()
    assert status.state.value == "Succeeded", status
    for r in status.replicas:
        assert r.state.value in ("Succeeded", "Stopped") and r.reason != "PodDeleted", r
    assert "done" in stored(run)


# ---- refusals -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "reason", "words"), [(401, "Unauthorized", "credentials"), (403, "Forbidden", "permission")]
)
def test_a_persistent_refusal_ends_the_follow_with_the_reason(sim, px_home, monkeypatch, status, reason, words):
    monkeypatch.setenv("PX_K8S_REFUSED_GIVE_UP_S", "1")
    sim.fail("GET", "pods", status, reason, f"{reason.lower()}: pods is refused", times=10**6)
    run = jupyter_px.submit(SLEEPER, native())
    final = wait_for(
        lambda: (s := run.status()).reason == reason and s,
        f"the run's reason {reason}",
    )
    assert words in final.message, final.message
    assert final.state.value != "Succeeded"


# ---- MPIJob: the launcher ----------------------------------------------------------------------


def test_the_mpi_launcher_is_followed_with_every_ranks_output_and_metrics(sim, px_home):
    """The MPI launcher has no replica-index label (training-operator newLauncher): it is the
    run's master-0, and its log (every rank's output, `@px-metrics` lines included) is stored."""
    code = (
        "import os\nfrom jupyter_px import tracking\n"
        "rank = int(os.environ['OMPI_COMM_WORLD_RANK'])\n"
        "print('hello from rank', rank, flush=True)\n"
        "tracking.log_metrics(step=rank, loss=1.0 / (rank + 1))\n"
    )
    topology = {"framework": "horovod", "backend": "kubeflow", "environment": {"replicas": {"n_workers": 2}}}
    run = jupyter_px.submit(code, topology)
    # each rank's output reaches the launcher through its own `kubectl exec` stream: in either order
    wait_for(
        lambda: "hello from rank 0" in (text := stored(run)) and "hello from rank 1" in text,
        "both ranks' output in the launcher's stored log",
    )
    reader = MetricsReader(run.paths)

    def losses():
        reader.poll()
        return sorted(reader.series("master-0", "loss").values)

    assert wait_for(lambda: len(losses()) == 2 and losses(), "the ranks' metrics") == [0.5, 1.0]


# ---- create: failures that pass are retried before any rollback ---------------------------------


def test_a_busy_api_server_slows_the_create_down_instead_of_failing_it(sim, px_home):
    """429 with Retry-After (the server's rate limit) and 503s are tried again, honouring
    Retry-After, before any rollback: the run starts, nothing is rolled back.

    master-0 ends only once every worker has (as a training job's rank 0 ends after its peers
    have joined): its success ends the run and deletes the pods still running, which would cut
    short a worker whose create came last on a loaded machine."""
    sim.fail("POST", "pods", 503, "ServiceUnavailable", "etcd leader changed", nth=1, times=2)
    sim.api.rate_limit = (5.0, 12)  # per second, burst: the preflight passes, the 16 creates at once do not
    code = WAIT_FOR_FILE + "import os\nprint('started', flush=True)\nif os.environ['RANK'] == '0':\n    wait('go')\n"
    try:
        run = jupyter_px.submit(code, native(13))
    finally:
        sim.api.rate_limit = None
    retried = [r for r in sim.requests if r[0] == "POST" and r[1].endswith("/pods")]
    assert len(retried) > 14, retried  # 14 pods, some asked for more than once
    wait_for(lambda: all(phase(sim, "worker", i) == "Succeeded" for i in range(13)), "every worker's end")
    touch(sim, "master", 0, "go")
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Succeeded", status
    assert "started" in stored(run, "worker", 12)


def test_a_job_whose_pods_a_quota_refuses_waits_with_the_reason(sim, px_home):
    """The operator's pod creates are refused (ResourceQuota): no pod exists, and the run is
    Pending with the operator's FailedCreate event as its reason, not a silent Pending."""
    quotas = sim.api.resource("", "v1", "resourcequotas")
    sim.api.create(quotas, {"metadata": {"name": "no-pods"}, "spec": {"hard": {"pods": "0"}}}, "default")
    topology = {"framework": "pytorch", "backend": "kubeflow", "environment": {"replicas": {"n_workers": 1}}}
    run = jupyter_px.submit(SLEEPER, topology)
    status = wait_for(
        lambda: (s := run.status()).reason and s.reason.startswith("FailedCreate") and s,
        "the run's reason",
    )
    assert status.state.value == "Pending", status
    assert "exceeded quota" in status.message, status.message
    run.stop()


# ---- a big run: bounded log reads, no line lost -------------------------------------------------


def test_a_run_above_the_streaming_limit_collects_every_log_once(tmp_path, monkeypatch, px_home):
    """Above 16 replicas only the master is streamed; every worker's log is read once its
    container ended, whole (hollow pods: no processes, a scripted line every 0.2 s)."""
    from kube_sim import scheduling
    from kube_sim.hollow import HollowKubelet, Script

    cluster = Cluster(controllers=("gc", "scheduler"), node=scheduling.node(pods="200"))
    hollow = HollowKubelet(cluster.api, Script(duration=2.0, interval=0.2, last="-master-0"))
    with cluster:
        hollow.start()
        monkeypatch.setenv("KUBECONFIG", cluster.kubeconfig(tmp_path / "kubeconfig"))
        monkeypatch.setenv("PX_K8S_CONFIG", str(tmp_path / "no-settings.yaml"))
        monkeypatch.setenv("PX_K8S_IMAGE", "python:3.11-slim")
        try:
            run = jupyter_px.submit("pass\n", native(24))
            status = run.wait(timeout=DEADLINE_S)
            assert status.state.value == "Succeeded", status
            for r in status.replicas:
                name = f"{run.run_id}-{r.role}-{r.index}"
                lines = [line for line in stored(run, r.role, r.index).splitlines() if line.startswith(name)]
                assert lines == [f"{name} line {n}" for n in range(hollow.produced[name])], (name, lines)
            log_reads = collections.Counter(path for method, path in cluster.requests if path.endswith("/log"))
            assert len(log_reads) == 25 and max(log_reads.values()) <= 2, log_reads
        finally:
            stop_followers(px_home)
            hollow.stop()
