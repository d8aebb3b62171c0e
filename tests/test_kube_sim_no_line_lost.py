"""No worker's log is lost when a job succeeds: what still runs when the job's success policy is
met (the workers a master did not wait for; a JobSet's Jobs still active) is deleted, and a
pod's log goes with it. With cleanPodPolicy Running the operator deleted them at once, before a
follower that started late (a loaded machine) had read a line: 10 of 10 PyTorchJobs lost their
worker's last line. Four runs of each Kubeflow kind and of TrainJob, at once: every rank's last
line is in the store.

Each replica prints its last line, then the master ends while the others linger a moment (a
DDP teardown, an exit hook), so the job's end finds them running."""

from __future__ import annotations

import pytest
from kube_sim_support import backend_cluster
from mpi_standins import install_mpirun, sshd_waits

import jupyter_px

pytestmark = pytest.mark.kube

#: Runs of each kind at once: enough to load the followers (the bug lost every run's line, not one
#: in ten), where ten took 1.6 core-minutes of the suite's CPU.
RUNS = 4
#: Each replica prints its last line and says so in a file (pods share this machine's disk outside
#: their volumes); the master ends once every replica of its run has, the others linger 3 s.
CODE = (
    "import os, pathlib, time\n"
    "me = f\"{{os.environ['PX_TASK_TYPE']}}-{{os.environ['PX_TASK_INDEX']}}\"\n"
    "print('working', me, flush=True)\n"
    "time.sleep(1)\n"
    "print('last line of', me, flush=True)\n"
    "said = pathlib.Path({folder!r}) / os.environ['PX_RUN_ID']\n"
    "said.mkdir(exist_ok=True)\n"
    "(said / me).touch()\n"
    "if me.startswith('master'):\n"
    "    while len(list(said.iterdir())) < {replicas}:\n"
    "        time.sleep(0.05)\n"
    "else:\n"
    "    time.sleep(3)\n"
)

KINDS = {
    "tfjob": ({"framework": "tensorflow", "backend": "kubeflow"}, {}),
    "pytorchjob": ({"framework": "pytorch", "backend": "kubeflow"}, {}),
    "mxjob": ({"framework": "mxnet", "backend": "kubeflow"}, {}),
    "mpijob": ({"framework": "horovod", "backend": "kubeflow"}, {}),
    "trainjob": ({"framework": "pytorch", "backend": "kubeflow-trainer"}, {}),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_ranks_last_line_is_kept_at_success(kind, tmp_path, monkeypatch, px_home):
    topology, options = KINDS[kind]
    mpi = topology["framework"] == "horovod"
    topology = {**topology, "environment": {"replicas": {"n_workers": 2 if mpi else 1}}}
    with backend_cluster(tmp_path, monkeypatch, px_home, **options) as sim:
        if mpi:
            install_mpirun(sim)
            sim.api.admission.append(sshd_waits)
        # MPI: the ranks (2 workers) run under the launcher, which ends when they have
        code = CODE.format(folder=str(tmp_path), replicas=2)
        runs = [jupyter_px.submit(code, topology, name=f"{kind}-{i}") for i in range(RUNS)]
        lost = []
        for run in runs:
            status = run.wait(timeout=300)
            assert status.state.value == "Succeeded", (run.run_id, status)
            # MPI: every rank runs under the launcher's mpirun and its output is the launcher's
            replicas = [("master", 0)] if mpi else [(r.role, r.index) for r in status.replicas]
            names = [f"worker-{rank}" for rank in range(2)] if mpi else [f"{role}-{index}" for role, index in replicas]
            text = "".join(run.logs(role, index, tail=None) for role, index in replicas)
            lost += [f"{run.run_id}: {name}" for name in names if f"last line of {name}" not in text]
        assert not lost, f"last lines lost: {lost}"
