"""The Kubernetes backends on the simulated cluster: the run is created through the backend and
the simulated operators and kubelet act; nothing here plays an operator. These tests were written
against the upstream rules, not against the backends: where a backend disagrees with a real
cluster they fail (the expected failures are listed in tests/kube_sim/README.md)."""

from __future__ import annotations

import pytest
from kube_sim import Cluster
from kube_sim_support import live_pods
from kubernetes_support import DEADLINE_S, stop_followers, use_cluster
from waiting import wait_for

import jupyter_px

pytestmark = pytest.mark.kube  # the simulated cluster: HTTP servers, controllers, processes

#: The replicas meet before printing and the master ends last: a PyTorchJob ends with its master,
#: and what still runs is then deleted (by the follower, once it has the logs), so a worker that
#: had not started yet, or not ended, would be cut short.
PRINT_ENV = (
    "import os, time, torch.distributed as dist\n"
    "dist.init_process_group('gloo')\n"
    "print('rank', os.environ.get('RANK'), 'world', os.environ.get('WORLD_SIZE'),"
    " 'master', os.environ.get('MASTER_ADDR'), flush=True)\n"
    "dist.barrier()\n"
    "rank = dist.get_rank()\n"
    "dist.destroy_process_group()\n"
    "if rank == 0:\n"
    "    time.sleep(5)\n"
)


@pytest.fixture(name="sim")
def sim_fixture(tmp_path, monkeypatch, px_home):
    """The simulated cluster (API server, controllers, kubelet) through KUBECONFIG, set up as the
    `kube` fixture does, and skipped where pods cannot have their own names and addresses."""
    with Cluster(namespaces=("default", "ml"), kubelet={"backoff_base": 0.5}) as cluster:
        if not cluster.kubelet.isolated:
            pytest.skip(f"pods cannot have their own names and addresses here: {cluster.kubelet.not_isolated_because}")
        use_cluster(cluster, tmp_path, monkeypatch)
        try:
            yield cluster
        finally:
            stop_followers(px_home)


def pods(sim) -> dict[str, dict]:
    return {p["metadata"]["name"]: p for p in sim.list("pods")}


@pytest.mark.kube
def test_native_pytorch_runs_to_success_with_logs(sim, px_home):
    run = jupyter_px.submit(
        PRINT_ENV, {"framework": "pytorch", "backend": "native", "environment": {"replicas": {"n_workers": 1}}}
    )
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Succeeded", status
    assert "rank 0 world 2" in run.logs("master", 0)
    assert "rank 1 world 2" in run.logs("worker", 0)


@pytest.mark.kube
def test_kubeflow_pytorchjob_runs_through_the_operator(sim, px_home):
    run = jupyter_px.submit(
        PRINT_ENV, {"framework": "pytorch", "backend": "kubeflow", "environment": {"replicas": {"n_workers": 1}}}
    )
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Succeeded", status
    (job,) = sim.list("pytorchjobs")
    assert any(c["type"] == "Succeeded" and c["status"] == "True" for c in job["status"]["conditions"])
    assert "rank 0 world 2" in run.logs("master", 0)
    assert "rank 1 world 2" in run.logs("worker", 0)


@pytest.mark.kube
def test_a_finished_kubeflow_job_leaves_no_pod_holding_resources(sim, px_home, tmp_path):
    """cleanPodPolicy None (the operators' default, pytorch_defaults.go) keeps a finished job's
    pods, the running ones too: the follower deletes those once it has their logs; the finished
    ones stay (their logs, no node resources held) until the run is stopped or deleted. The master
    ends once the worker has printed (a file the worker writes after its line: on a loaded machine
    the worker's container once started after the master had ended, with no log to keep)."""
    up = tmp_path / "worker-up"
    code = (
        f"import os, pathlib, time\nup = pathlib.Path({str(up)!r})\nprint('up', flush=True)\n"
        "if os.environ['PX_TASK_TYPE'] == 'master':\n"
        "    while not up.exists():\n        time.sleep(0.05)\n"
        "else:\n    up.touch()\n    time.sleep(600)\n"
    )
    run = jupyter_px.submit(
        code, {"framework": "pytorch", "backend": "kubeflow", "environment": {"replicas": {"n_workers": 1}}}
    )
    assert run.wait(timeout=DEADLINE_S).state.value == "Succeeded"
    (job,) = sim.list("pytorchjobs")
    assert job["spec"]["runPolicy"]["cleanPodPolicy"] == "None", job["spec"]["runPolicy"]
    assert not live_pods(sim), "the worker the master did not wait for runs on"
    assert "up" in run.logs("worker", 0), "its log was read before its pod went"
    assert run.status().replica("worker", 0).state.value == "Stopped"


@pytest.mark.kube
def test_stopping_a_native_run_is_stopped_not_failed_143(sim, px_home):
    """The kubelet records a deleted pod's containers as terminated 143 (phase Failed) before the
    pod goes: a stop must still read as Stopped."""
    run = jupyter_px.submit(
        "import time\nprint('up', flush=True)\ntime.sleep(600)\n",
        {"framework": "pytorch", "backend": "native", "environment": {"replicas": {"n_workers": 1}}},
    )

    wait_for(lambda: "up" in run.logs("master", 0), "the run to start", timeout=DEADLINE_S, poll=0.2)
    status = run.stop()
    assert status.state.value == "Stopped", status


@pytest.mark.kube
def test_a_log_rotated_by_the_kubelet_is_kept_whole(sim, px_home):
    """The kubelet rotates container logs (containerLogMaxSize, here 16 KiB) and serves only the
    newest file: a follower that streams from the start keeps every line; one that re-reads
    loses the rotated part. The code starts writing once the follower streams its log (it waits
    for a file the test writes into its working directory): what was rotated away before anyone
    read it is gone on a real cluster too. The code pauses every 50 lines (4 KiB, a quarter of a
    file): the simulated kubelet's follow, like the real one, skips a file rotated twice while it
    looked away (a stream whose reader stalls for 8 pauses, on a loaded machine, would too).
    Reconnects after a rotation: test_kube_sim_follower.py."""
    sim.kubelet.log_max_bytes = 16 * 1024
    code = (
        "import pathlib, time\n"
        "print('ready', flush=True)\n"
        "while not pathlib.Path('go').exists(): time.sleep(0.05)\n"
        "for i in range(2000):\n"
        "    print(f'line {i:05d} ' + 'x' * 40)\n"
        "    if i % 50 == 0: time.sleep(0.2)\n"
    )
    run = jupyter_px.submit(
        code, {"framework": "pytorch", "backend": "native", "environment": {"replicas": {"n_workers": 0}}}
    )
    wait_for(lambda: "ready" in run.logs("master", 0), "the follower to stream the log", timeout=DEADLINE_S)
    (pod,) = sim.list("pods")
    (sim.kubelet.root / "pods" / pod["metadata"]["uid"] / "volumes" / "px-work" / "go").write_text("go")
    assert run.wait(timeout=DEADLINE_S).state.value == "Succeeded"
    lines = [line for line in run.logs("master", 0, tail=None).splitlines() if line.startswith("line ")]
    assert len(lines) == 2000 and lines[0].startswith("line 00000") and lines[-1].startswith("line 01999")


@pytest.mark.kube
def test_the_trainer_backend_passes_the_trainjob_webhook(sim, px_home):
    """Kubeflow Trainer's webhook wants each runtime patch's manager to be a domain-prefixed path
    (jobset.go Validate): a TrainJob it refuses never exists."""
    topology = {"framework": "pytorch", "backend": "kubeflow-trainer", "environment": {"replicas": {"n_workers": 1}}}
    run = jupyter_px.submit("pass\n", topology)
    try:
        assert sim.list("trainjobs")
    finally:
        run.stop()


DDP = (
    "import os, torch, torch.distributed as dist\n"
    "dist.init_process_group('gloo')\n"
    "torch.manual_seed(dist.get_rank())\n"
    "model = torch.nn.Linear(4, 1)\n"
    "ddp = torch.nn.parallel.DistributedDataParallel(model)\n"
    "optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)\n"
    "for _ in range(3):\n"
    "    optimizer.zero_grad(); ddp(torch.randn(8, 4)).sum().backward(); optimizer.step()\n"
    "weights = torch.cat([p.detach().flatten() for p in model.parameters()])\n"
    "gathered = [torch.zeros_like(weights) for _ in range(dist.get_world_size())]\n"
    "dist.all_gather(gathered, weights)\n"
    "print('identical', all(torch.equal(gathered[0], g) for g in gathered), 'world', dist.get_world_size())\n"
    "dist.destroy_process_group()\n"
)


@pytest.mark.kube
@pytest.mark.parametrize(
    "backend",
    [
        "native",
        "kubeflow",
        "kubeflow-trainer",
    ],
)
def test_pytorch_ddp_with_gloo_gives_identical_weights(sim, px_home, backend):
    """Master + 2 workers, DistributedDataParallel over gloo: the replicas find each other through
    the environment each backend (and, for kubeflow, the operator) gives them."""
    topology = {"framework": "pytorch", "backend": backend, "environment": {"replicas": {"n_workers": 2}}}
    run = jupyter_px.submit(DDP, topology)
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Succeeded", (status, run.logs("master", 0))
    for role, index in (("master", 0), ("worker", 0), ("worker", 1)):
        assert "identical True world 3" in run.logs(role, index)


@pytest.mark.kube
@pytest.mark.parametrize("backend", ["native", "kubeflow"])
def test_a_runs_started_and_finished_times_are_its_containers(sim, px_home, backend, tmp_path):
    """`jupyter px runs` shows when a run started and how long it ran: its containers' times, as
    the kubelet reports them (whole seconds), whenever the follower noticed. The replicas meet
    first (a file each in a folder the pods share): a PyTorchJob succeeds with its master, and a
    worker the loaded kubelet had not started by then is deleted never having run (it has no
    start time, rightly)."""
    topology = {"framework": "pytorch", "backend": backend, "environment": {"replicas": {"n_workers": 1}}}
    met = tmp_path / "met"
    met.mkdir()
    code = (
        f"import os, time\nhere = {str(met)!r}\n"
        "open(os.path.join(here, os.environ['PX_TASK_TYPE'] + os.environ['PX_TASK_INDEX']), 'w').close()\n"
        "while len(os.listdir(here)) < 2:\n    time.sleep(0.05)\n"
        "time.sleep(5)\nprint('done', flush=True)\n"
    )
    run = jupyter_px.submit(code, topology)
    status = run.wait(timeout=DEADLINE_S)
    assert status.state.value == "Succeeded", status
    assert status.started_at is not None and status.finished_at is not None, status
    assert status.finished_at - status.started_at >= 4, status  # 5 s of sleep, to the second
    for replica in status.replicas:
        assert replica.started_at is not None and status.started_at <= replica.started_at, replica
