"""TensorFlow end to end on the simulated cluster: a chief and a worker, through the `kubeflow`
backend (a TFJob; the operator writes TF_CONFIG) and the `native` one (the pod entry builds it),
start TensorFlow's gRPC servers from TF_CONFIG and train one variable together with
MultiWorkerMirroredStrategy. The servers bind the wildcard address on port 2222 in every pod, so
this needs the pod network (`Cluster(pod_network=True)`, kube_sim/kubelet_network.py): each pod
its own network namespace and address (without it the second server fails, "Could not start
gRPC server"). Each TensorFlow process takes seconds to import on a loaded machine, so this is
one small job per backend."""

from __future__ import annotations

import contextlib
import importlib.util
import threading
from collections.abc import Iterator

import pytest
from kube_sim import Cluster
from kube_sim.kubelet_network import PodNetworkUnavailable
from kubernetes_support import DEADLINE_S, stop_followers, use_cluster

import jupyter_px

pytestmark = pytest.mark.kube  # the simulated cluster: HTTP servers, controllers, processes

#: Each replica trains w to the mean of the replicas' targets (chief: 1, worker: 3): a variable
#: with MEAN aggregation takes each step's update all-reduced over both replicas (gRPC between
#: the pods), so w ends equal on both and near 2, which neither replica's own data gives.
TRAIN = """
import json, os, socket, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # no Keras 3 imported with TensorFlow: 1-2 s of CPU
import tensorflow as tf
from jupyter_px import tracking

config = json.loads(os.environ["TF_CONFIG"])
task = config["task"]
rank = 0 if task["type"] == "chief" else task["index"] + 1
strategy = tf.distribute.MultiWorkerMirroredStrategy()
with strategy.scope():
    w = tf.Variable(0.0, aggregation=tf.VariableAggregation.MEAN)
target = tf.constant(1.0 + 2.0 * rank)


@tf.function
def step():
    def replica():
        with tf.GradientTape() as tape:
            loss = (w - target) ** 2
        w.assign_sub(0.2 * tape.gradient(loss, w))
        ranks = tf.distribute.get_replica_context().all_reduce("sum", tf.constant(float(rank + 1)))
        return loss, ranks
    return strategy.run(replica)


for i in range(20):
    loss, ranks = step()
    tracking.log_metrics(step=i, loss=float(loss), w=float(w.numpy()))
# what the pod's hosts file makes of every address in TF_CONFIG (now that every peer has run:
# a name resolves once its pod is on the node, as a Service's DNS record once its pod exists)
for role, addresses in sorted(config["cluster"].items()):
    for index, address in enumerate(addresses):
        print("resolves", role, index, address, socket.gethostbyname(address.rsplit(":", 1)[0]), flush=True)
print("task", task["type"], "index", task["index"], "replicas", strategy.num_replicas_in_sync,
      "ranks", float(ranks), "w", repr(float(w.numpy())), flush=True)
step()  # a last collective: the chief ends only after the worker has printed
# A worker that ends right after the last collective can fail the chief, still reading from it
# (RecvBuf: "Connection reset by peer"), so the worker stays up until the chief's server is gone.
if task["type"] != "chief":
    chief = config["cluster"]["chief"][0].rsplit(":", 1)
    while True:
        try:
            socket.create_connection((chief[0], int(chief[1])), timeout=1).close()
        except OSError:
            break
        time.sleep(0.1)
"""


@pytest.fixture(name="sim")
def sim_fixture(tmp_path, monkeypatch, px_home):
    """The simulated cluster with a pod network, through KUBECONFIG; skipped (with the reason)
    where the machine permits no network namespaces or TensorFlow is not installed."""
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("tensorflow is not installed (it is in the test extras)")
    try:
        cluster = Cluster(namespaces=("default",), kubelet={"backoff_base": 0.5}, pod_network=True)
    except PodNetworkUnavailable as error:
        pytest.skip(f"pods cannot have their own network namespaces here: {error}")
    with cluster:
        use_cluster(cluster, tmp_path, monkeypatch)
        try:
            yield cluster
        finally:
            stop_followers(px_home)


@contextlib.contextmanager
def _pod_addresses(sim: Cluster) -> Iterator[dict[str, str]]:
    """podIP -> pod name, for every pod seen while the block runs (the backends delete theirs)."""
    seen: dict[str, str] = {}
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.1):
            for pod in sim.list("pods"):
                if (pod.get("status") or {}).get("podIP"):
                    seen[pod["status"]["podIP"]] = pod["metadata"]["name"]

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        done.set()
        thread.join()


def _resolved(text: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(role, index) -> (its address in TF_CONFIG, the IP that name resolved to in the pod)."""
    lines = (line.split() for line in text.splitlines())
    return {(w[1], w[2]): (w[3], w[4]) for w in lines if w[:1] == ["resolves"]}


def _last_line(text: str) -> dict[str, str]:
    line = next(line for line in reversed(text.splitlines()) if line.startswith("task "))
    words = line.split()
    return dict(zip(words[::2], words[1::2], strict=False))


@pytest.mark.parametrize("backend", ["kubeflow", "native"])
def test_multi_worker_mirrored_strategy_trains_across_pod_addresses(sim, px_home, backend):
    """kubeflow: the operator's TFJob writes TF_CONFIG into the pods; native: the pod entry
    builds it from the run's ConfigMap. Either way the chief and the worker start their servers
    on port 2222 of their own pods and all-reduce through them."""
    topology = {"framework": "tensorflow", "backend": backend, "environment": {"replicas": {"n_workers": 1}}}
    with _pod_addresses(sim) as by_ip:
        run = jupyter_px.submit(TRAIN, topology)
        status = run.wait(timeout=DEADLINE_S)
    logs = {role: run.logs(role, 0) for role in ("master", "worker")}
    assert status.state.value == "Succeeded", f"{status.state.value} {status.reason}: {status.message}\n" + "".join(
        f"--- {role}\n{text[-4000:]}\n" for role, text in logs.items()
    )

    # each name in TF_CONFIG resolved, in both pods, to one pod's own address on the pod
    # network, every server on port 2222
    views = [_resolved(logs[role]) for role in ("master", "worker")]
    assert views[0] == views[1], views
    addresses = views[0]
    assert sorted(addresses) == [("chief", "0"), ("worker", "0")], addresses
    ips = {ip for _, ip in addresses.values()}
    assert len(ips) == 2 and all(ip.startswith("10.244.0.") for ip in ips), addresses
    assert all(address.endswith(".svc:2222") for address, _ in addresses.values()), addresses
    for address, ip in addresses.values():  # the pod that name stands for has that podIP
        assert address.startswith(by_ip.get(ip, "?") + "."), (address, ip, by_ip)
    if backend == "kubeflow":
        (job,) = sim.list("tfjobs")
        assert any(c["type"] == "Succeeded" and c["status"] == "True" for c in job["status"]["conditions"])
        name = job["metadata"]["name"]
        assert [address for address, _ in addresses.values()] == [
            f"{name}-chief-0.default.svc:2222",
            f"{name}-worker-0.default.svc:2222",
        ]

    chief, worker = _last_line(logs["master"]), _last_line(logs["worker"])
    assert (chief["task"], worker["task"]) == ("chief", "worker"), logs
    assert chief["replicas"] == worker["replicas"] == "2"
    assert chief["ranks"] == worker["ranks"] == "3.0"  # 1 + 2, all-reduced across the pods
    assert chief["w"] == worker["w"], (chief, worker)  # one variable, mirrored on both
    assert abs(float(chief["w"]) - 2.0) < 0.05, chief  # the mean of both targets: both took part

    metrics = run.metrics()
    for replica in ("master-0", "worker-0"):
        series = metrics[replica]["w"]
        assert len(series.values) == 20, (replica, series)
        assert repr(series.values[-1]) == chief["w"]
