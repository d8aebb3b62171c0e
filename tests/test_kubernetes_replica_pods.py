"""Which pod is which replica: the labels rendering puts on pods (and their templates) are the ones
the follower reads back, for every backend. Rendered for real (pure: no cluster); where an
operator or JobSet creates the pods, its labels are added as it adds them."""

from __future__ import annotations

from jupyter_px.backends.kubernetes.render import render_manifests
from jupyter_px.backends.kubernetes.shared.replica_pods import (
    COMPLETION_INDEX_LABEL,
    REPLICA_INDEX_LABEL,
    REPLICATED_JOB_LABEL,
    replica_pods,
)
from jupyter_px.backends.kubernetes.shared.settings import KubernetesSettings
from jupyter_px.topology import parse_topology

CODE = {"entrypoint": "train.py", "language": "python", "args": []}
FILES = {"train.py": b"pass\n"}
TF = parse_topology({"framework": "tensorflow", "environment": {"replicas": {"n_workers": 3, "n_ps": 2}}})
TORCH = parse_topology({"framework": "pytorch", "environment": {"replicas": {"n_workers": 3}}})
MPI = parse_topology({"framework": "mpi", "environment": {"replicas": {"n_workers": 2}}})


def _render(backend, topology):
    return render_manifests(backend, topology, "run-1", CODE, FILES, KubernetesSettings(), "default")


def _replicas(topology) -> set[tuple[str, int]]:
    return {(spec.role, spec.index) for spec in topology.replicas()}


def test_native_pods_are_read_back_as_the_replicas_they_were_rendered_for():
    mapping = replica_pods("kubernetes")  # what the topology's `native` is stored as
    pods = [o for o in _render("native", TF) if o["kind"] == "Pod"]
    assert sorted(mapping.replica_of(pod, TF) for pod in pods) == sorted(_replicas(TF))


def test_kubeflow_pods_are_the_operators_index_on_our_role():
    mapping = replica_pods("kubeflow")
    (job,) = [o for o in _render("kubeflow", TF) if o["kind"] == "TFJob"]
    found = []
    for spec in job["spec"]["tfReplicaSpecs"].values():
        template = spec["template"]
        for index in range(spec["replicas"]):  # the operator's pods: the template plus its index label
            labels = {**template["metadata"]["labels"], REPLICA_INDEX_LABEL: str(index)}
            found.append(mapping.replica_of({"metadata": {"labels": labels}}, TF))
    assert sorted(found) == sorted(_replicas(TF))


def test_trainer_nodes_are_replicas_in_rank_order_and_the_mpi_launcher_is_the_master():
    mapping = replica_pods("kubeflow-trainer")
    (job,) = [o for o in _render("kubeflow-trainer", TORCH) if o["kind"] == "TrainJob"]
    (patch,) = job["spec"]["runtimePatches"]
    (node,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    labels = node["template"]["spec"]["template"]["metadata"]["labels"]
    ranks = range(job["spec"]["trainer"]["numNodes"])
    pods = [{"metadata": {"labels": {**labels, COMPLETION_INDEX_LABEL: str(rank)}}} for rank in ranks]
    assert [mapping.replica_of(pod, TORCH) for pod in pods] == [
        ("master", 0),
        ("worker", 0),
        ("worker", 1),
        ("worker", 2),
    ]
    launcher = {"metadata": {"labels": {REPLICATED_JOB_LABEL: "launcher"}}}
    assert mapping.replica_of(launcher, MPI) == ("master", 0)
    assert mapping.replica_of({"metadata": {"labels": {COMPLETION_INDEX_LABEL: "1"}}}, MPI) == ("worker", 1)


def test_a_pod_that_is_no_replica_is_none():
    for backend in ("kubernetes", "kubeflow"):
        assert replica_pods(backend).replica_of({"metadata": {"labels": {}}}, TF) is None
    bad = {"metadata": {"labels": {COMPLETION_INDEX_LABEL: "seven"}}}
    assert replica_pods("kubeflow-trainer").replica_of(bad, TORCH) is None
