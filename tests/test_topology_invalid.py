"""A corpus of invalid topologies, each with the exact problems it must report."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from jupyter_px.topology import TopologyError, parse_topology, try_parse

CORPUS = yaml.safe_load((Path(__file__).parent / "fixtures" / "invalid_topologies.yaml").read_text())


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 30
    assert len({case["name"] for case in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("case", CORPUS, ids=[case["name"] for case in CORPUS])
def test_invalid_topology_reports_exact_problems(case):
    with pytest.raises(TopologyError) as caught:
        parse_topology(case["yaml"])
    assert [str(problem) for problem in caught.value.problems] == case["problems"]
    # The same problems through the never-raising entry point the widget and sidebar use.
    topology, problems = try_parse(case["yaml"])
    assert topology is None and [str(p) for p in problems] == case["problems"]


def test_error_message_lists_every_problem():
    case = next(c for c in CORPUS if c["name"] == "several problems at once")
    with pytest.raises(TopologyError) as caught:
        parse_topology(case["yaml"])
    text = str(caught.value)
    assert text.startswith("invalid topology (3 problems):")
    for problem in case["problems"]:
        assert problem in text


def test_problems_serialise_for_rest_and_json():
    with pytest.raises(TopologyError) as caught:
        parse_topology("framework: caffe\n")
    assert caught.value.to_dict() == {
        "error": "invalid topology",
        "problems": [
            {
                "path": "framework",
                "message": "'caffe' is not one of 'tensorflow', 'pytorch', 'mxnet', 'horovod' or 'mpi'",
            }
        ],
    }
