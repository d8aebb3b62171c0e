"""TensorFlow end to end on the simulated cluster: a TFJob (chief + 1 worker) whose replicas start
TensorFlow's gRPC servers from the TF_CONFIG the operator wrote and train one variable together
with MultiWorkerMirroredStrategy. The servers bind the wildcard address on port 2222 in every pod,
so this needs the pod network (`Cluster(pod_network=True)`, kubelet_network.py): each pod its own
network namespace and address. Each TensorFlow process takes about 10 s to import on a loaded
machine, so this is one small job."""

from __future__ import annotations

import importlib.util
import json

import pytest
from k8s_support import DEADLINE_S, stop_followers, use_cluster
from kube_sim import Cluster
from kube_sim.kubelet_network import PodNetworkUnavailable

import jupyter_px

pytestmark = pytest.mark.kube  # the simulated cluster: HTTP servers, controllers, processes

#: Each replica trains w to the mean of the replicas' targets (chief: 1, worker: 3): a variable
#: with MEAN aggregation takes each step's update all-reduced over both replicas (gRPC between
#: the pods), so w ends equal on both and near 2, which neither replica's own data gives.
TRAIN = """
import json, os, socket, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf
from jupyter_px import tracking

config = json.loads(os.environ["TF_CONFIG"])
task = config["task"]
# what the pod's hosts file makes of every address in TF_CONFIG
for role, addresses in sorted(config["cluster"].items()):
    for index, address in enumerate(addresses):
        print("resolves", role, index, socket.gethostbyname(address.rsplit(":", 1)[0]), flush=True)
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
print("task", task["type"], "index", task["index"], "replicas", strategy.num_replicas_in_sync,
      "ranks", float(ranks), "w", repr(float(w.numpy())), flush=True)
step()  # a last collective: the chief ends only after the worker has printed
if task["type"] == "chief":
    time.sleep(3)  # the job ends with its chief, and the operator then deletes what still runs
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


def _resolved(text: str) -> dict[tuple[str, str], str]:
    return {(w[1], w[2]): w[3] for w in (line.split() for line in text.splitlines()) if w[:1] == ["resolves"]}


def _last_line(text: str) -> dict[str, str]:
    line = next(line for line in reversed(text.splitlines()) if line.startswith("task "))
    words = line.split()
    return dict(zip(words[::2], words[1::2], strict=False))


def test_a_tfjob_trains_with_multi_worker_mirrored_strategy_across_pod_addresses(sim, px_home):
    topology = {"framework": "tensorflow", "backend": "kubeflow", "environment": {"replicas": {"n_workers": 1}}}
    run = jupyter_px.submit(TRAIN, topology)
    status = run.wait(timeout=DEADLINE_S * 2)
    logs = {role: run.logs(role, 0) for role in ("master", "worker")}
    assert status.state.value == "Succeeded", (status, logs)

    (job,) = sim.list("tfjobs")
    assert any(c["type"] == "Succeeded" and c["status"] == "True" for c in job["status"]["conditions"])
    # each name in TF_CONFIG (`<job>-<type>-<i>.<ns>.svc:2222`) resolved, in both pods, to its
    # pod's own address on the pod network, and every server listened on port 2222
    views = [_resolved(logs[role]) for role in ("master", "worker")]
    assert views[0] == views[1], views
    addresses = views[0]
    assert sorted(addresses) == [("chief", "0"), ("worker", "0")], addresses
    assert len(set(addresses.values())) == 2 and all(ip.startswith("10.244.0.") for ip in addresses.values())
    name = job["metadata"]["name"]
    chief_pod = sim.get("pods", f"{name}-chief-0")
    assert chief_pod is not None and chief_pod["status"]["podIP"] == addresses[("chief", "0")], chief_pod
    env = {e["name"]: e.get("value") for e in chief_pod["spec"]["containers"][0]["env"]}
    cluster = json.loads(env["TF_CONFIG"])["cluster"]
    assert cluster == {"chief": [f"{name}-chief-0.default.svc:2222"], "worker": [f"{name}-worker-0.default.svc:2222"]}

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
