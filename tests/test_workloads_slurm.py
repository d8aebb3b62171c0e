"""The reference workloads (examples/workloads/) on the real Slurm cluster the tests start, with
their topology files' resources as written (memory declared as a user would: the requests and
limits of `torch.yaml` and `tf_mwms.yaml`), checked for what they computed
(tests/workloads_support.py): the same final loss as `torchrun` of the same script (PyTorch) or
as the local backend's run (MultiWorkerMirroredStrategy), every step in the metrics and in
TensorBoard, and every training replica's checkpoints in the run's outputs (the run store is on
the filesystem the nodes share). Small on purpose: one PyTorch and one TensorFlow job."""

from __future__ import annotations

import pytest
from slurm_support import slurm_cluster_fixture, use_slurm_fixture  # noqa: F401 (fixtures)
from workloads_support import DEADLINE_S, check_run, reference_loss, shared_folder, submit

from jupyter_px.service import RunService

pytestmark = pytest.mark.slurm


@pytest.fixture
def shared(tmp_path_factory):
    return shared_folder(tmp_path_factory)


@pytest.mark.parametrize("name", ["torch_cnn", "tf_mwms"])
def test_a_workload_computes_on_slurm_what_it_computes_here(name, use_slurm, px_home, shared):
    expected = reference_loss(name, 1, shared)
    service = RunService()
    run_id = submit(service, name, "slurm", workers=1)
    service.wait(run_id, timeout=DEADLINE_S)
    check_run(service, run_id, name, expected=expected)
