"""An MPI run submitted through the project runs real `mpirun` (pip's Open MPI) on the simulated
cluster, on both MPIJob APIs, and every rank's output reaches the run's store:

- kubeflow.org/v1 (training-operator v1.9.0): the launcher's mpirun starts each worker's daemon
  with `/etc/mpi/kubexec.sh`, i.e. `kubectl exec` (kubectl copied in by the kubectl-delivery init
  container) from inside the launcher pod, with the pod's service account, to the API server;
- kubeflow.org/v2beta1 (mpi-operator v0.6.0): over ssh to each worker's sshd.

Each rank prints the pod it runs in: ranks run on the workers, not in the launcher."""

from __future__ import annotations

import pytest
from kube_sim_support import backend_cluster, require_mpi_pods

import jupyter_px

pytestmark = pytest.mark.kube

CODE = (
    "import os, socket\n"
    "rank = int(os.environ['OMPI_COMM_WORLD_RANK'])\n"
    "print('rank', rank, 'of', os.environ['OMPI_COMM_WORLD_SIZE'], 'on', socket.gethostname(),"
    " os.environ.get('MY_SETTING'), flush=True)\n"
)


@pytest.mark.parametrize("api", ["v1", "v2beta1"])
def test_an_mpi_run_through_the_project_runs_real_mpirun_across_the_workers(tmp_path, monkeypatch, px_home, api):
    with backend_cluster(tmp_path, monkeypatch, px_home, namespaces=("default",), mpi_operator=api == "v2beta1") as sim:
        require_mpi_pods(sim, ssh=api == "v2beta1")
        environment = {"env": {"MY_SETTING": "forwarded"}, "replicas": {"n_workers": 2}}
        run = jupyter_px.submit(CODE, {"framework": "mpi", "backend": "kubeflow", "environment": environment})
        (job,) = sim.list("mpijobs")
        assert job["apiVersion"] == f"kubeflow.org/{api}"
        status = run.wait(timeout=240)
        text = run.logs("master", 0, tail=None)
        assert status.state.value == "Succeeded", (status, text)
        base = job["metadata"]["name"]
        for rank in (0, 1):
            assert f"rank {rank} of 2 on {base}-worker-{rank} forwarded" in text, text
        if api == "v1":  # the launcher reached each worker through kubectl exec, as the API server saw it
            # (not read from the launcher's `set -x` trace: the two kubexec.sh processes interleave
            # their characters there, and "kubectl exec <pod>" was once never whole in it)
            execs = {path for method, path in sim.requests if path.endswith("/exec")}
            for rank in (0, 1):
                assert f"/api/v1/namespaces/default/pods/{base}-worker-{rank}/exec" in execs, (execs, text)
