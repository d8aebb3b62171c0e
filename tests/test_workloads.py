"""The reference workloads (examples/workloads/) on the local backend, as a user runs them: the
cells of notebooks/workloads.ipynb, executed top to bottom in a fresh kernel (nbclient). Its cells
are the scripts, unchanged (checked); each run is checked for what it computed, not only that it
ended. The same seed (the scripts' default, 0) gives the same final loss as `torchrun
--standalone` of the same script (PyTorch; within 1e-6 on the CPU), every replica's metrics and
tracking's TensorBoard events have every step, every training replica's checkpoints are on disk.

The notebook is executed once for the module (the four workloads, some 1.5 core-minutes), and
every test reads its runs. Its PyTorch runs start as a user's do: the kernel's first run cold
(it starts the template), the next warm, forked with their DataLoader workers forking again inside
them (persistent workers). Its TensorFlow runs: the first cold, the next from the spawn-ahead pool
the first sized (TensorFlow warm is tests/test_warm_pool.py's).

The Kubernetes backends: tests/test_workloads_kube.py; Slurm: tests/test_workloads_slurm.py; SSH
hosts: tests/test_ssh_workloads.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from workloads_support import SAME_LOSS, WORKLOADS, check_run, record_local_loss, reference_loss, shared_folder

from jupyter_px.service import RunService

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "workloads.ipynb"


def _cells(nb) -> dict[str, str]:
    """{run name: the body} of each %%px_distributed cell."""
    found = {}
    for cell in nb.cells:
        first, _, body = cell.source.partition("\n")
        if cell.cell_type == "code" and first.startswith("%%px_distributed"):
            found[first.split("--name ", 1)[1].split()[0]] = body
    return found


def test_the_notebooks_cells_are_the_scripts():
    cells = _cells(nbformat.read(NOTEBOOK, as_version=4))
    assert set(cells) == {name.replace("_", "-") for name in WORKLOADS}
    for name, workload in WORKLOADS.items():
        assert cells[name.replace("_", "-")] == workload.path.read_text().rstrip("\n"), name


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook executed in a fresh kernel, its runs in a store of the module's own:
    (the executed notebook, {run name: run id}, the store)."""
    home = tmp_path_factory.mktemp("px_home")
    workdir = tmp_path_factory.mktemp("workloads")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(workdir)}})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PX_HOME", str(home))
        client.execute(env=dict(os.environ))
    runs = {view.record.name: view.record.run_id for view in RunService(home=home).list_runs()}
    return client.nb, runs, home


@pytest.fixture
def service(executed, monkeypatch):
    """A service on the notebook's store."""
    monkeypatch.setenv("PX_HOME", str(executed[2]))
    return RunService()


def _run_id(executed, name: str) -> str:
    runs = executed[1]
    assert set(runs) == {workload.replace("_", "-") for workload in WORKLOADS}, runs
    return runs[name.replace("_", "-")]


@pytest.mark.jobs
@pytest.mark.timeout(900)  # the notebook: every workload in turn, over 300 s on a slow, loaded machine
def test_the_workloads_notebook_plots_the_losses(executed):
    nb = executed[0]
    plots = [o for cell in nb.cells if cell.source.startswith("%px_plot") for o in cell.outputs]
    figures = [o["data"]["application/vnd.plotly.v1+json"] for o in plots if "data" in o]
    assert len(figures) == 2 and all(sum(len(t["x"]) for t in f["data"]) > 0 for f in figures)


@pytest.mark.jobs
@pytest.mark.parametrize("name", ["torch_cnn", "torch_lm"])
def test_a_pytorch_workload_ends_with_torchruns_loss(name, executed, service, tmp_path_factory):
    expected = reference_loss(name, 1, shared_folder(tmp_path_factory))
    check_run(service, _run_id(executed, name), name, expected=expected)


@pytest.mark.jobs
def test_keras_on_multi_worker_mirrored_strategy(executed, service, tmp_path_factory):
    """Every replica ends with the same loss; the run is the session's reference for the other
    backends' tests (tests/test_workloads_kube.py, tests/test_workloads_slurm.py), or equals
    the reference one of them made first."""
    loss = check_run(service, _run_id(executed, "tf_mwms"), "tf_mwms")
    assert abs(record_local_loss("tf_mwms", 1, shared_folder(tmp_path_factory), loss) - loss) <= SAME_LOSS


@pytest.mark.jobs
def test_keras_on_parameter_servers_trains_through_the_chief(executed, service):
    """Chief, a worker and a parameter server: the chief's model.fit ran every step (metrics and
    TensorBoard), checkpointed, and the loss fell below chance (ln 4) on held-out points."""
    run_id = _run_id(executed, "tf_ps")
    loss = check_run(service, run_id, "tf_ps")
    assert loss < 1.0, loss
    for replica in service.status(run_id).replicas:  # servers: stopped by the run, not failures
        if replica.role != "master":
            assert (replica.state.value, replica.reason) == ("Succeeded", "StoppedByRun"), replica
