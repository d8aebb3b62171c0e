"""Hostile or absurd input: huge counts, YAML bombs, deep nesting, huge values.

Each is refused with one problem that names the field and quotes a bounded excerpt of the value,
before anything is built from it. Inputs that could exhaust the machine before the limits existed
(the billion laughs, nesting that crashes the YAML parser) are run in the CLI tests, in a child
process under a memory limit.
"""

from __future__ import annotations

import pytest

from jupyter_px.topology import TopologyError, apply_overrides, json_schema, parse_topology
from jupyter_px.topology.limits import (
    MAX_DOCUMENT_CHARS,
    MAX_PROCESSES_PER_REPLICA,
    MAX_REPLICAS_PER_ROLE,
    MAX_SHOWN_CHARS,
    MAX_TOTAL_REPLICAS,
    MAX_YAML_DEPTH,
    MAX_YAML_VALUES,
)

HUGE = "99999999999999999999999999"


def problems(source) -> list[str]:
    with pytest.raises(TopologyError) as caught:
        parse_topology(source)
    return [str(p) for p in caught.value.problems]


def test_huge_worker_count_is_refused_with_the_field_and_the_maximum():
    text = f"framework: pytorch\nenvironment:\n  replicas:\n    n_workers: {HUGE}\n"
    assert problems(text) == [f"environment.replicas.n_workers: {HUGE} is above the maximum ({MAX_REPLICAS_PER_ROLE})"]


def test_counts_at_the_per_role_maximum_are_accepted():
    topology = parse_topology(
        {"framework": "pytorch", "environment": {"replicas": {"n_masters": 0, "n_workers": MAX_REPLICAS_PER_ROLE}}}
    )
    assert topology.total_replicas() == MAX_REPLICAS_PER_ROLE


def test_total_replicas_above_the_maximum_are_refused():
    half = MAX_TOTAL_REPLICAS // 2
    text = f"framework: tensorflow\nenvironment:\n  replicas: {{n_workers: {half}, n_ps: {half}}}\n"
    assert problems(text) == [
        f"environment.replicas: {2 * half + 1} replicas in all (master 1, worker {half}, ps {half}) "
        f"is above the maximum ({MAX_TOTAL_REPLICAS})"
    ]


def test_command_line_count_is_refused_naming_the_field():
    with pytest.raises(TopologyError) as caught:
        apply_overrides(None, framework="pytorch", workers=10_000_000_000)
    assert [str(p) for p in caught.value.problems] == [
        f"environment.replicas.n_workers: 10000000000 is above the maximum ({MAX_REPLICAS_PER_ROLE})"
    ]


def test_processes_per_replica_has_a_maximum():
    assert problems({"framework": "pytorch", "environment": {"processes_per_replica": 10**12}}) == [
        f"environment.processes_per_replica: 1000000000000 is above the maximum ({MAX_PROCESSES_PER_REPLICA})"
    ]


def test_azure_node_count_is_bounded_and_named():
    assert problems({"node_count": 10**15, "distributed_backend": "mpi"}) == [
        f"node_count: 1000000000000000 is above the maximum ({MAX_REPLICAS_PER_ROLE})"
    ]


def test_a_python_int_too_long_to_print_is_still_reported():
    """repr() of an int over 4,300 digits raises ValueError; the message must not."""
    (message,) = problems({"framework": "pytorch", "environment": {"replicas": {"n_workers": 10**5000}}})
    assert message.startswith("environment.replicas.n_workers: a whole number of 5001 digits is above the maximum")


def test_a_yaml_integer_too_long_to_convert_is_a_topology_error():
    (message,) = problems("framework: pytorch\nenvironment:\n  replicas:\n    n_workers: " + "9" * 5000 + "\n")
    assert message.startswith("yaml: line 4, column 16: a number of 5000 digits")
    assert len(message) < 200


def test_the_json_schema_states_the_maxima():
    replicas = json_schema()["$defs"]["Replicas"]["properties"]
    assert replicas["n_workers"]["maximum"] == replicas["n_ps"]["maximum"] == MAX_REPLICAS_PER_ROLE
    assert f"{MAX_TOTAL_REPLICAS:,} replicas in all" in replicas["n_workers"]["description"]
    environment = json_schema()["$defs"]["Environment"]["properties"]
    assert environment["processes_per_replica"]["maximum"] == MAX_PROCESSES_PER_REPLICA


# ---- YAML bombs and other text that costs more than it says ------------------------------------


def laughs(levels: int) -> str:
    """The billion laughs: each level is nine aliases of the one before (9**levels values)."""
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"l{i}: &l{i} [{','.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_alias_expansion_beyond_the_limit_is_refused_with_a_short_message():
    text = laughs(7)  # 9**7 = 4.8 million values from 400 bytes
    assert len(text) < 500
    (message,) = problems(text)
    assert message == (
        f"yaml: line 7, column 10: aliases (*name) expand this document beyond {MAX_YAML_VALUES:,} values; "
        "write the topology out instead"
    )


def test_aliases_that_expand_modestly_are_fine():
    topology = parse_topology("""
framework: pytorch
environment:
  replicas:
    n_workers: 3
    default_worker:
      resources: &big {cpu: {requests: 2, limits: 4}, memory: {requests: 1Gi, limits: 2Gi}}
    worker:
      - index: 1
        resources: *big
""")
    assert topology.replica("worker", 1).resources == topology.replica("worker", 0).resources


def test_an_alias_inside_its_own_anchor_is_refused():
    (message,) = problems("tags: &a [x, *a]\n")
    assert message == "yaml: line 1, column 14: alias *a is used inside the value it names (a loop)"


def test_nesting_deeper_than_the_limit_is_refused():
    depth = MAX_YAML_DEPTH + 1
    (message,) = problems("tags: " + "[" * depth + "]" * depth + "\n")
    assert message == f"yaml: line 1, column {6 + MAX_YAML_DEPTH}: nested more than {MAX_YAML_DEPTH} levels deep"


def test_a_document_over_the_size_limit_is_refused_before_it_is_parsed():
    text = "framework: pytorch\n" + "#" * MAX_DOCUMENT_CHARS + "\n"
    assert problems(text) == [
        f"yaml: the text is {len(text):,} characters long; the limit is {MAX_DOCUMENT_CHARS:,} (2 MiB)"
    ]


# ---- long values are quoted in part --------------------------------------------------------------


@pytest.mark.parametrize(
    "source, path",
    [
        ({"framework": "x" * 100_000}, "framework"),
        ({"environment": {"resources": {"memory": "9" * 100_000 + "Qi"}}}, "environment.resources.memory.requests"),
        ({"environment": {"resources": {"cpu": "y" * 100_000}}}, "environment.resources.cpu.requests"),
        ({"node_count": "z" * 100_000, "distributed_backend": "mpi"}, "node_count"),
        ({"node_count": 2, "distributed_backend": "w" * 100_000}, "distributed_backend"),
        ({"environment": {"tensorflow": {}}, "framework": "v" * 100_000}, "framework"),
        ({"environment": {"replicas": {"n_workers": "u" * 100_000}}}, "environment.replicas.n_workers"),
        (["t" * 100_000], ""),
    ],
)
def test_messages_quote_a_bounded_excerpt_of_long_values(source, path):
    with pytest.raises(TopologyError) as caught:
        parse_topology(source)
    problem = caught.value.problems[0]
    assert problem.path == path
    assert len(problem.message) < MAX_SHOWN_CHARS + 160, problem.message
    assert "..." in problem.message


def test_a_long_unknown_key_is_clipped_in_the_path():
    with pytest.raises(TopologyError) as caught:
        parse_topology({"environment": {"k" * 100_000: 1}})
    (problem,) = caught.value.problems
    assert problem.path.startswith("environment.kkkk") and problem.path.endswith("...")
    assert len(str(problem)) < 2 * MAX_SHOWN_CHARS + 60
