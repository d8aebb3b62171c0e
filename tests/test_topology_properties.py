"""Arbitrary input yields a Topology or a TopologyError with located problems, never another exception."""

from __future__ import annotations

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_px.topology import Topology, TopologyError, parse_topology, to_yaml

KEYS = st.sampled_from(
    [
        "framework",
        "backend",
        "environment",
        "replicas",
        "resources",
        "cpu",
        "memory",
        "gpu",
        "requests",
        "request",
        "limits",
        "n_workers",
        "n_ps",
        "n_masters",
        "n_evaluators",
        "worker",
        "ps",
        "index",
        "default_worker",
        "default_ps",
        "tensorflow",
        "pytorch",
        "mxnet",
        "horovod",
        "worker_resources",
        "ps_resources",
        "node_count",
        "distributed_backend",
        "worker_count",
        "parameter_server_count",
        "process_count_per_node",
        "restart_policy",
        "max_restarts",
        "env",
        "image",
        "processes_per_replica",
        "version",
        "kind",
        "zzz",
    ]
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 2000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(
        [
            "tensorflow",
            "pytorch",
            "mxnet",
            "horovod",
            "mpi",
            "local",
            "kubeflow",
            "500m",
            "1Gi",
            "x",
            "-1",
            "ps",
            "OnFailure",
            "",
        ]
    ),
    st.text(max_size=8),
)
DOCUMENTS = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=5)),
    max_leaves=25,
)


def _outcome(source):
    try:
        topology = parse_topology(source)
    except TopologyError as error:
        assert error.problems and all(p.message for p in error.problems)
        return None
    assert isinstance(topology, Topology)
    assert parse_topology(to_yaml(topology)) == topology
    assert len(topology.replicas()) == topology.total_replicas()
    return topology


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCUMENTS)
def test_arbitrary_documents(document):
    _outcome(document)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.just("environment"), st.dictionaries(KEYS, DOCUMENTS, max_size=4), max_size=1),
    st.sampled_from([None, "tensorflow", "pytorch", "mxnet", "horovod"]),
)
def test_arbitrary_environments(document, framework):
    if framework:
        document = dict(document, framework=framework)
    _outcome(document)


@settings(max_examples=200, deadline=None)
@given(DOCUMENTS)
def test_arbitrary_yaml_text(document):
    try:
        text = yaml.safe_dump(document)
    except yaml.YAMLError:
        return
    _outcome(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text(text):
    _outcome(text)
