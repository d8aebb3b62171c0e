"""The seeds' YAML, pasted verbatim, parses; resolved resources are what polyaxon's rules say."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from outside_data import shared_folder

from jupyter_px.topology import TopologyError, parse_topology, to_yaml

SEEDS = Path(__file__).parent / "fixtures" / "seeds"

#: YAML blocks in each source document the fixtures were cut from (000: the current polyaxonfile
#: form, 001: the older form, 002: PyTorch).
SEED_BLOCKS = {"000": 7, "001": 8, "002": 7}


def seed(name: str) -> str:
    return (SEEDS / f"{name}.yaml").read_text()


def resources(spec) -> dict:
    return spec.resources.model_dump(mode="json", exclude_none=True)


#: Fragments of an environment section that name per-index entries without any workers: they
#: parse (every key is understood) and fail validation for the reason a user must fix.
FRAGMENT_ERRORS = {
    "000_04": "worker_resources: a job without a framework has no worker replicas",
    "001_04": "worker_resources: a job without a framework has no worker replicas",
    "002_04": "worker_resources: a job without a framework has no worker replicas",
}


@pytest.mark.parametrize("name", sorted(p.stem for p in SEEDS.glob("*.yaml")))
def test_every_seed_block_is_understood(name):
    text = seed(name)
    if name in FRAGMENT_ERRORS:
        with pytest.raises(TopologyError) as caught:
            parse_topology(text)
        assert [str(p) for p in caught.value.problems] == [FRAGMENT_ERRORS[name]]
        return
    topology = parse_topology(text)
    assert parse_topology(to_yaml(topology)) == topology, "YAML round trip changes the topology"


def test_fixtures_are_the_seed_blocks_verbatim():
    """The fixtures were cut from the seed documents: prove they still match, block for block."""
    seeds = shared_folder("seeds")
    found = {}
    for prefix in SEED_BLOCKS:
        (source,) = seeds.glob(f"{prefix}_*.txt")
        blocks = re.findall(r"```yaml\n(.*?)```", source.read_text(), re.S)
        found[prefix] = len(blocks)
        assert blocks == [seed(f"{prefix}_{i:02d}") for i in range(len(blocks))], source.name
    assert found == SEED_BLOCKS
    assert len(list(SEEDS.glob("*.yaml"))) == sum(SEED_BLOCKS.values())


MASTER = {
    "cpu": {"requests": 1.0, "limits": 2.0},
    "memory": {"requests": 256.0, "limits": 1024.0},
    "gpu": {"requests": 1, "limits": 1},
}
WORKER_2 = {"cpu": {"requests": 1.0, "limits": 2.0}, "memory": {"requests": 256.0, "limits": 1024.0}}
PS_DEFAULT = {"cpu": {"requests": 1.0, "limits": 1.0}, "memory": {"requests": 256.0, "limits": 256.0}}
PS_0 = {"cpu": {"requests": 1.0, "limits": 1.0}, "memory": {"requests": 512.0, "limits": 512.0}}


@pytest.mark.parametrize("name", ["000_02", "001_02"])
def test_tensorflow_full_example_resolves_every_replica(name):
    """Seed 000's second example (and its older form in 001, with `gpu: request:`)."""
    topology = parse_topology(seed(name))
    assert topology.framework == "tensorflow"
    assert topology.counts() == {"master": 1, "worker": 7, "ps": 3}
    replicas = {(s.role, s.index): s for s in topology.replicas()}
    assert len(replicas) == 11
    assert resources(replicas["master", 0]) == MASTER
    for index in range(7):
        expected = WORKER_2 if index == 2 else MASTER
        assert resources(replicas["worker", index]) == expected, f"worker {index}"
    assert replicas["worker", 2].resources.gpus() == 0
    assert replicas["worker", 0].resources.gpus() == 1
    assert resources(replicas["ps", 0]) == PS_0
    assert resources(replicas["ps", 1]) == resources(replicas["ps", 2]) == PS_DEFAULT


def test_short_tensorflow_example():
    topology = parse_topology(seed("000_01"))
    assert topology.counts() == {"master": 1, "worker": 3, "ps": 1}
    assert all(not s.resources.model_dump(exclude_none=True) for s in topology.replicas())


def test_master_resources_example_and_backend():
    assert resources(parse_topology(seed("000_00")).replica("master", 0)) == MASTER
    kubeflow = parse_topology(seed("000_06"))
    assert (kubeflow.backend, kubeflow.framework, kubeflow.version, kubeflow.kind) == (
        "kubeflow",
        "tensorflow",
        1,
        "experiment",
    )
    assert parse_topology(seed("002_06")).framework == "pytorch"


def test_older_form_singular_gpu_request_means_requests():
    topology = parse_topology(seed("001_00"))
    assert resources(topology.replica("master", 0))["gpu"] == {"requests": 1, "limits": 1}


def test_older_form_frameworks_come_from_the_section_key():
    assert parse_topology(seed("001_01")).framework == "tensorflow"
    mxnet = parse_topology(seed("001_06"))
    assert (mxnet.framework, mxnet.counts()) == ("mxnet", {"master": 1, "worker": 3, "ps": 1})
    torch = parse_topology(seed("001_07"))
    assert (torch.framework, torch.counts()) == ("pytorch", {"master": 1, "worker": 3})


def test_pytorch_seed_resolves_workers():
    topology = parse_topology(seed("002_02"))
    assert topology.counts() == {"master": 1, "worker": 7}
    assert resources(topology.replica("worker", 2)) == WORKER_2
    assert resources(topology.replica("worker", 6)) == MASTER
    assert parse_topology(seed("002_01")).counts() == {"master": 1, "worker": 3}


def test_default_worker_fragment_alone_is_valid_and_unused():
    topology = parse_topology(seed("000_05"))
    assert topology.counts() == {"master": 1}
    assert topology.replicas_section.default_worker.resources.gpus() == 1
