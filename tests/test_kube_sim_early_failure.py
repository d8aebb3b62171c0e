"""A replica that fails early or late keeps its failure: on every Kubernetes backend the failing
replica is reported Failed with its exit code, its reason and its log, whether it exits 0.5 s,
3 s or 12 s after it started (12 s: long after its log is followed; a TrainJob's runtime restarts
the container six times, so this delay is paid seven times there).

The simulated operators act as upstream's do (tests/kube_sim): training-operator v1.9.0 deletes
every pod of a job whose `runPolicy.backoffLimit` is exceeded, the failed one included
(pkg/controller.v1/common/job.go ReconcileJobs -> DeletePodsAndServices, before the job is
finished, so cleanPodPolicy does not apply), and a finished pod is deleted at once (no grace):
its log goes with it. Three runs per backend start together, one per delay."""

from __future__ import annotations

import pytest
from kube_sim_support import backend_cluster
from mpi_standins import install_mpirun, sshd_waits

import jupyter_px

pytestmark = pytest.mark.kube

DELAYS = (0.5, 3, 12)
#: Each replica says it started; worker 0 fails with exit code 3 after `delay` s; the others wait
#: (MPI ranks end: the stand-in mpirun waits for every rank, where Open MPI's would kill them).
CODE = (
    "import os, sys, time\n"
    "me = (os.environ['PX_TASK_TYPE'], os.environ['PX_TASK_INDEX'])\n"
    "print('started', *me, flush=True)\n"
    "time.sleep({delay})\n"
    "if me == ('worker', '0'):\n"
    "    print('worker 0 fails now', flush=True)\n"
    "    sys.exit(3)\n"
    "time.sleep({rest})\n"
)

CASES = {
    # backend id: (topology, cluster options, the replica that reports the failure)
    "native": ({"framework": "pytorch", "backend": "native"}, {}, ("worker", 0)),
    "tfjob": ({"framework": "tensorflow", "backend": "kubeflow"}, {}, ("worker", 0)),
    "pytorchjob": ({"framework": "pytorch", "backend": "kubeflow"}, {}, ("worker", 0)),
    "mxjob": ({"framework": "mxnet", "backend": "kubeflow"}, {}, ("worker", 0)),
    # MPI: the ranks run under the launcher's mpirun, whose exit code and log are the launcher's
    "mpijob-v1": ({"framework": "horovod", "backend": "kubeflow"}, {}, ("master", 0)),
    "mpijob-v2beta1": ({"framework": "horovod", "backend": "kubeflow"}, {"mpi_operator": True}, ("master", 0)),
    "trainjob": ({"framework": "pytorch", "backend": "kubeflow-trainer"}, {}, ("worker", 0)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_failing_replica_keeps_its_exit_code_and_log(case, tmp_path, monkeypatch, px_home):
    topology, options, failing = CASES[case]
    mpi = topology["framework"] == "horovod"
    topology = {**topology, "environment": {"replicas": {"n_workers": 2 if mpi else 1}}}
    # restarts after 0.1, 0.2, 0.4 ... s (the kubelet's back-off, 10 s doubling upstream): the
    # TrainJob's six restarts wait 6 s in all instead of 32
    with backend_cluster(tmp_path, monkeypatch, px_home, kubelet={"backoff_base": 0.1}, **options) as sim:
        if mpi:
            install_mpirun(sim)
            sim.api.admission.append(sshd_waits)
        runs = {
            delay: jupyter_px.submit(CODE.format(delay=delay, rest=0 if mpi else 600), topology, name=f"fail-{i}")
            for i, delay in enumerate(DELAYS)
        }
        for delay, run in runs.items():
            status = run.wait(timeout=240)
            assert status.state.value == "Failed", (delay, status)
            replica = status.replica(*failing)
            assert replica.state.value == "Failed", (delay, replica, status)
            assert replica.exit_code == 3, (delay, replica)
            assert replica.reason, (delay, replica)
            log = run.logs(*failing, tail=None)
            assert "worker 0 fails now" in log, (delay, log)
