"""Units, per-index rules, other input forms, overrides and exports of the topology model."""

from __future__ import annotations

import jsonschema
import pytest

from jupyter_px.topology import (
    TopologyError,
    apply_overrides,
    json_schema,
    parse_topology,
    summary_html,
    summary_text,
    to_dict,
    to_yaml,
)
from jupyter_px.topology.quantities import format_cpu, format_memory, parse_cpu, parse_memory_mib


@pytest.mark.parametrize(
    "text, cores", [(2, 2.0), (0.5, 0.5), ("2", 2.0), ("500m", 0.5), ("0.25", 0.25), ("1e1", 10.0)]
)
def test_cpu_quantities(text, cores):
    assert parse_cpu(text) == cores


@pytest.mark.parametrize(
    "text, mib", [(256, 256.0), ("1Gi", 1024.0), ("512Mi", 512.0), ("0.5", 0.5), ("2048Ki", 2.0), ("1G", 1e9 / 2**20)]
)
def test_memory_quantities_are_mib(text, mib):
    assert parse_memory_mib(text) == pytest.approx(mib)


def test_kubernetes_formatting():
    assert (format_cpu(2.0), format_cpu(0.5), format_memory(1024.0), format_memory(512.0), format_memory(0.5)) == (
        "2",
        "500m",
        "1Gi",
        "512Mi",
        "512Ki",
    )


def test_scalar_resource_is_requests_and_limits():
    topology = parse_topology("environment:\n  resources:\n    cpu: 2\n    memory: 1Gi\n    gpu: 1\n")
    res = topology.replica("master", 0).resources
    assert (res.cpu.requests, res.cpu.limits, res.memory.limits, res.gpu.requests) == (2, 2, 1024, 1)


def test_override_replaces_only_the_fields_it_names():
    topology = parse_topology("""
framework: pytorch
environment:
  image: base:1
  restart_policy: OnFailure
  max_restarts: 2
  replicas:
    n_workers: 3
    default_worker:
      image: worker:2
      env: {LR: 0.1, DEBUG: true}
      resources: {cpu: {requests: 1, limits: 2}}
    worker:
      - index: 1
        env: {LR: 0.2}
""")
    w0, w1 = topology.replica("worker", 0), topology.replica("worker", 1)
    master = topology.replica("master", 0)
    assert (master.image, master.restart_policy, master.max_restarts) == ("base:1", "OnFailure", 2)
    assert (w0.image, w0.env, w0.resources.cpu.limits) == ("worker:2", {"LR": "0.1", "DEBUG": "true"}, 2)
    assert (w1.image, w1.env, w1.resources.cpu.limits) == ("worker:2", {"LR": "0.2"}, 2)


def test_azure_mpi_keywords():
    topology = parse_topology("node_count: 2\nprocess_count_per_node: 1\ndistributed_backend: mpi\n")
    assert (topology.framework, topology.counts(), topology.environment.processes_per_replica) == (
        "horovod",
        {"master": 1, "worker": 2},
        1,
    )


def test_azure_ps_keywords_have_no_chief():
    topology = parse_topology(
        {"node_count": 2, "worker_count": 2, "parameter_server_count": 1, "distributed_backend": "ps"}
    )
    assert (topology.framework, topology.counts()) == ("tensorflow", {"worker": 2, "ps": 1})


def test_azure_single_node_processes():
    topology = parse_topology({"node_count": 1, "process_count_per_node": 4, "framework": "pytorch"})
    assert topology.counts() == {"master": 1} and topology.environment.processes_per_replica == 4


def test_overrides_from_the_command_line():
    base = parse_topology("framework: tensorflow\nenvironment:\n  replicas: {n_workers: 2, n_ps: 1}\n")
    changed = apply_overrides(base, workers=4, backend="kubeflow")
    assert changed.counts() == {"master": 1, "worker": 4, "ps": 1} and changed.backend == "kubeflow"
    assert apply_overrides(None, framework="pytorch", workers=2).counts() == {"master": 1, "worker": 2}
    with pytest.raises(TopologyError, match=r"environment.replicas.n_ps: -1 is not >= 0"):
        apply_overrides(base, ps=-1)


TF_WITH_PS = """
framework: tensorflow
backend: kubeflow
name: tf-job
environment:
  resources: {cpu: 2}
  replicas:
    n_workers: 2
    n_ps: 1
    default_ps: {resources: {memory: 1Gi}}
"""


def test_a_different_framework_starts_from_a_fresh_topology():
    """`--framework pytorch --workers 1` over a TensorFlow topology with ps: the job the flags name."""
    base = parse_topology(TF_WITH_PS)
    changed = apply_overrides(base, framework="pytorch", workers=1)
    assert (changed.framework, changed.counts()) == ("pytorch", {"master": 1, "worker": 1})
    assert changed.backend == "kubeflow"  # still valid, so kept
    assert changed.name is None and changed.replica("master", 0).resources.cpu is None  # nothing else carried over
    assert apply_overrides(base, framework="mxnet").counts() == {"master": 1}
    assert apply_overrides(base, framework="pytorch", backend="local").backend == "local"


def test_the_same_framework_keeps_the_topology():
    base = parse_topology(TF_WITH_PS)
    same = apply_overrides(base, framework="tensorflow", workers=3)
    assert same.counts() == {"master": 1, "worker": 3, "ps": 1} and same.name == "tf-job"
    assert same.replica("ps", 0).resources.memory.limits == 1024


def test_a_framework_on_a_topology_without_one_keeps_its_settings():
    base = parse_topology("environment:\n  resources: {cpu: 2, memory: 2Gi}\n")
    changed = apply_overrides(base, framework="pytorch", workers=2)
    assert changed.counts() == {"master": 1, "worker": 2}
    assert changed.replica("master", 0).resources.memory.limits == 2048


@pytest.mark.jobs
def test_submit_with_a_framework_flag_runs_the_topology_it_names(px_home, tmp_path):
    """What `%%px_distributed --framework pytorch --workers 1` and `jupyter px run --framework`
    do over the current TensorFlow topology: submit starts the PyTorch job, not an error."""
    import jupyter_px

    run = jupyter_px.submit(
        "import os\nprint('rank', os.environ['RANK'], 'of', os.environ['WORLD_SIZE'])\n",
        TF_WITH_PS.replace("backend: kubeflow", "backend: local"),
        framework="pytorch",
        workers=1,
        workdir=tmp_path,
    )
    status = run.wait(timeout=120, check=True)
    assert run.topology.framework == "pytorch" and run.topology.counts() == {"master": 1, "worker": 1}
    assert sorted(r.key for r in status.replicas) == ["master-0", "worker-0"]
    assert "rank 1 of 2" in run.logs("worker", 0)


def test_yaml_round_trip_keeps_everything():
    text = """
framework: tensorflow
backend: kubeflow
environment:
  tf_master_type: master
  node_selector: {pool: gpu}
  resources: {cpu: {requests: 500m, limits: 2}, memory: {requests: 1Gi, limits: 2Gi}, gpu: {request: 1, limits: 1}}
  replicas:
    n_workers: 3
    n_evaluators: 1
    worker: [{index: 2, resources: {memory: {limits: 512}}, restart_policy: OnFailure, max_restarts: 3}]
"""
    topology = parse_topology(text)
    assert parse_topology(to_yaml(topology)) == topology
    assert to_dict(topology)["environment"]["resources"]["cpu"] == {"requests": 0.5, "limits": 2}


def test_json_schema_accepts_what_the_model_accepts():
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for text in (
        "framework: pytorch\nenvironment:\n  replicas: {n_workers: 2}\n",
        "environment:\n  resources: {cpu: {requests: 500m}, memory: {limits: 1Gi}}\n",
    ):
        assert not list(validator.iter_errors(to_dict(parse_topology(text))))
    assert list(validator.iter_errors({"framework": "caffe"}))
    assert {"framework", "backend", "environment"} <= set(schema["properties"])


def test_summary_groups_identical_replicas():
    topology = parse_topology(
        "framework: tensorflow\nenvironment:\n  replicas:\n"
        "    n_workers: 1000\n    worker: [{index: 500, resources: {cpu: 4}}]\n"
    )
    text = summary_text(topology)
    assert "worker  0-499,501-999" in text and "worker  500" in text
    assert "1001 replicas (master 1, worker 1000)" in text
    assert "<table>" in summary_html(topology) and "0-499,501-999" in summary_html(topology)


def test_large_topology_resolves():
    data = {
        "framework": "tensorflow",
        "environment": {
            "replicas": {
                "n_workers": 1000,
                "n_ps": 100,
                "worker": [{"index": i * 7, "resources": {"cpu": 2}} for i in range(100)],
                "ps": [{"index": i, "resources": {"memory": 512}} for i in range(100)],
            }
        },
    }
    topology = parse_topology(data)
    replicas = topology.replicas()
    assert len(replicas) == 1101
    assert topology.replica("worker", 693).resources.cpu.limits == 2
    assert topology.replica("worker", 694).resources.cpu is None


def test_exported_yaml_puts_an_overrides_index_first():
    """`- index: 1` heads each override: the replica it applies to, then its settings."""
    topology = parse_topology(
        {
            "framework": "tensorflow",
            "environment": {
                "replicas": {
                    "n_workers": 2,
                    "n_ps": 1,
                    "worker": [{"resources": {"cpu": {"requests": 1}}, "image": "w:1", "index": 1}],
                    "ps": [{"image": "p:1", "index": 0}],
                }
            },
        }
    )
    text = to_yaml(topology)
    assert "    worker:\n    - index: 1\n" in text
    assert "    ps:\n    - index: 0\n" in text
    assert parse_topology(text) == topology
