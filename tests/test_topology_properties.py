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


RESOURCES = st.sampled_from(
    [None, {"cpu": 2}, {"cpu": {"requests": 1, "limits": 2}}, {"memory": "1Gi"}, {"gpu": 1, "cpu": 2}]
)


@st.composite
def replica_sections(draw):
    workers = draw(st.integers(0, 40))
    ps = draw(st.integers(0, 6))
    section: dict = {"n_workers": workers, "n_ps": ps}
    for role, count in (("worker", workers), ("ps", ps)):
        default = draw(RESOURCES)
        if default is not None:
            section[f"default_{role}"] = {"resources": default}
        indices = draw(st.lists(st.integers(0, max(count - 1, 0)), unique=True, max_size=min(count, 8)))
        overrides = []
        for index in indices:
            entry: dict = {"index": index}
            resources = draw(RESOURCES)
            if resources is not None:
                entry["resources"] = resources
            if draw(st.booleans()):
                entry["env"] = {"A": "1"}
            overrides.append(entry)
        if overrides and count:
            section[role] = overrides
    return section


def _expand(indices: str) -> list[int]:
    out = []
    for part in indices.split(","):
        start, _, end = part.partition("-")
        out += range(int(start), int(end or start) + 1)
    return out


@settings(max_examples=200, deadline=None)
@given(replica_sections())
def test_summary_rows_partition_the_replicas_by_their_settings(section):
    """The summary is built from defaults and overrides only; it must say what resolving every
    replica says: each row's indices are exactly the replicas of its role with its settings."""
    from jupyter_px.topology import summary_rows

    topology = parse_topology({"framework": "tensorflow", "environment": {"replicas": section}})

    def settings_of(spec):
        return (spec.resources, spec.image, spec.restart_policy, spec.max_restarts, sorted(spec.env.items()))

    expected: dict = {}
    for spec in topology.replicas():
        expected.setdefault((spec.role, repr(settings_of(spec))), []).append(spec.index)
    got = {}
    for row in summary_rows(topology):
        indices = _expand(row.indices)
        assert indices == sorted(indices) and len(set(indices)) == len(indices)
        got[(row.role, repr(settings_of(topology.replica(row.role, indices[0]))))] = indices
    assert got == expected
