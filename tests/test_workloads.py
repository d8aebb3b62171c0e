"""The reference workloads (examples/workloads/) on the local backend, cold and warm (the `launch`
fixture), at their tiny size: what each job computed, not only that it ended. The same seed gives
the same final loss as `torchrun --standalone` of the same script (PyTorch; within 1e-6 on the
CPU), every replica's metrics and tracking's TensorBoard events have every step, every training
replica's checkpoints are on disk. A warm round forks the replicas, and their DataLoader workers
fork again inside them (persistent workers), from a template that has imported what an
optimizer, DDP and autocast import on first use.

The Kubernetes backends: tests/test_workloads_kube.py; Slurm: tests/test_workloads_slurm.py.
"""

from __future__ import annotations

import pytest
from workloads_support import DEADLINE_S, SAME_LOSS, check_run, record_local_loss, reference_loss, shared_folder, submit

from jupyter_px.service import RunService

pytestmark = pytest.mark.jobs


@pytest.fixture
def shared(tmp_path_factory):
    return shared_folder(tmp_path_factory)


# Warm, as a user's local runs start. Cold, these workloads run on every other backend: the SSH
# hosts, the Slurm nodes and the simulated pods start their replicas cold (test_ssh_workloads.py,
# test_workloads_slurm.py, test_workloads_kube.py), and so do this module's TensorFlow tests.
@pytest.mark.warm_only
@pytest.mark.parametrize("name", ["torch_cnn", "torch_lm"])
def test_a_pytorch_workload_ends_with_torchruns_loss(name, launch, px_home, shared):
    expected = reference_loss(name, 1, shared)
    service = RunService()
    run_id = submit(service, name, "local", workers=1)
    service.wait(run_id, timeout=DEADLINE_S)
    check_run(service, run_id, name, expected=expected)


@pytest.mark.cold_only  # warm, from the spawn-ahead pool a first run sizes: tests/test_warm_pool.py
def test_keras_on_multi_worker_mirrored_strategy(launch, px_home, shared):
    """Every replica ends with the same loss; the run is the session's reference for the other
    backends' tests (tests/test_workloads_kube.py, tests/test_workloads_slurm.py), or equals
    the reference one of them made first."""
    service = RunService()
    run_id = submit(service, "tf_mwms", "local", workers=1)
    service.wait(run_id, timeout=DEADLINE_S)
    loss = check_run(service, run_id, "tf_mwms")
    assert abs(record_local_loss("tf_mwms", 1, shared, loss) - loss) <= SAME_LOSS


@pytest.mark.cold_only
def test_keras_on_parameter_servers_trains_through_the_chief(launch, px_home):
    """Chief, a worker and a parameter server: the chief's model.fit ran every step (metrics and
    TensorBoard), checkpointed, and the loss fell below chance (ln 4) on held-out points."""
    service = RunService()
    run_id = submit(service, "tf_ps", "local", workers=1)
    service.wait(run_id, timeout=DEADLINE_S)
    loss = check_run(service, run_id, "tf_ps")
    assert loss < 1.0, loss
    for replica in service.status(run_id).replicas:  # servers: stopped by the run, not failures
        if replica.role != "master":
            assert (replica.state.value, replica.reason) == ("Succeeded", "StoppedByRun"), replica
