"""Nothing of a run keeps running after it ends, on the simulated cluster: what still runs when
the job ends (replicas that never end by themselves: parameter servers, MXNet servers, MPI
workers, workers a master did not wait for) is deleted by the run's follower once it has their
logs (cleanPodPolicy None, the operators' default), and `stop` or Delete on a finished run
deletes what is left and names it. The simulated operator and kubelet act; the test counts."""

from __future__ import annotations

import pytest
from kube_sim_support import backend_cluster, live_pods, wait_for
from kubernetes_support import DEADLINE_S

import jupyter_px
from jupyter_px.backends.base import BackendError

pytestmark = pytest.mark.kube

#: The master ends at once; every other replica would run for ten minutes. (An MPI job's ranks
#: all run under the launcher's mpirun, which waits for each: they end at once; its workers, the
#: operator's `sleep 365d`, are what outlives the launcher.)
MASTER_ENDS_OTHERS_LINGER = (
    "import os, time\n"
    "print('up', os.environ['PX_TASK_TYPE'], flush=True)\n"
    "if os.environ['PX_TASK_TYPE'] != 'master' and 'OMPI_COMM_WORLD_RANK' not in os.environ:\n"
    "    time.sleep(600)\n"
)

#: plural of the job, topology replicas: each a job whose non-master replicas outlive the master.
JOBS = {
    "pytorch": ("pytorchjobs", {"n_workers": 1}),
    "tensorflow": ("tfjobs", {"n_workers": 1, "n_ps": 1}),
    "mxnet": ("mxjobs", {"n_workers": 1, "n_ps": 1}),
    "mpi": ("mpijobs", {"n_workers": 2}),
}


@pytest.fixture(name="sim")
def sim_fixture(tmp_path, monkeypatch, px_home):
    with backend_cluster(tmp_path, monkeypatch, px_home) as cluster:
        yield cluster


def job_ended(sim, plural: str) -> bool:
    jobs = sim.list(plural)
    return bool(jobs) and any(
        c["type"] in ("Succeeded", "Failed") and c["status"] == "True"
        for c in (jobs[0].get("status") or {}).get("conditions") or []
    )


@pytest.mark.parametrize("framework", sorted(JOBS))
def test_no_pod_runs_on_after_a_kubeflow_job_ends(sim, px_home, framework):
    plural, replicas = JOBS[framework]
    topology = {"framework": framework, "backend": "kubeflow", "environment": {"replicas": replicas}}
    run = jupyter_px.submit(MASTER_ENDS_OTHERS_LINGER, topology)
    wait_for(lambda: job_ended(sim, plural), f"the {plural[:-1]} to end")
    wait_for(lambda: not live_pods(sim), "the pods still running after the job ended to be deleted", timeout=60)
    run.stop()


def test_stop_on_a_finished_run_deletes_what_is_left(sim, px_home):
    """The finished pods are kept (their logs); a `stop` of the finished run deletes them, the job
    and the rest of the run's objects."""
    topology = {"framework": "pytorch", "backend": "kubeflow", "environment": {"replicas": {"n_workers": 1}}}
    run = jupyter_px.submit("print('done')\n", topology)
    assert run.wait(timeout=DEADLINE_S).state.value == "Succeeded"
    assert sim.list("pods"), "the finished pods are kept until the run is stopped"
    with sim.outage(), pytest.raises(BackendError, match="is finished; deleting what it left on the cluster"):
        run.stop()
    status = run.stop()
    assert status.state.value == "Succeeded", "stop keeps a finished run's outcome"
    wait_for(lambda: not sim.list("pods") and not sim.list("pytorchjobs"), "the finished run's objects to go")
    assert not sim.list("configmaps")


def run_objects(sim) -> list[str]:
    """Every object a run may leave: its job, pods, Services (ours and the operator's), ConfigMaps."""
    kinds = ("pytorchjobs", "pods", "services", "configmaps")
    return [f"{kind}/{obj['metadata']['name']}" for kind in kinds for obj in sim.list(kind)]


def test_jupyter_px_stop_on_a_finished_run_removes_what_it_left_and_says_what(sim, px_home, capsys):
    """`jupyter px stop` (and `%px_stop`, through the same run service) of a finished run deletes
    what the operator kept and names it; the run keeps its outcome and logs."""
    from jupyter_px.cli import main

    topology = {"framework": "pytorch", "backend": "kubeflow", "environment": {"replicas": {"n_workers": 1}}}
    run = jupyter_px.submit("print('done')\n", topology)
    assert run.wait(timeout=DEADLINE_S).state.value == "Succeeded"
    assert sim.list("pods") and sim.list("pytorchjobs"), "the operator keeps the finished pods and the job"
    capsys.readouterr()
    kept = len(sim.list("pods"))
    assert main(["stop", run.run_id]) == 0
    said = capsys.readouterr().out
    assert f"run {run.run_id} had already finished: Succeeded; removed from the cluster: PyTorchJob" in said, said
    assert f"{kept} Pod" in said and "1 ConfigMap" in said, said
    wait_for(lambda: not run_objects(sim), "nothing of the finished run left on the cluster")
    assert "done" in run.logs("master", 0)
    assert main(["stop", run.run_id]) == 0
    assert capsys.readouterr().out == f"run {run.run_id} had already finished: Succeeded\n"


def test_deleting_a_finished_run_removes_what_it_left_first(sim, px_home):
    """The sidebar's Delete and "Clear finished" (the run service's delete): what the run left on
    the cluster goes first, and is named; a cluster that cannot be reached keeps the run."""
    from jupyter_px.service import RunService

    topology = {"framework": "pytorch", "backend": "kubeflow", "environment": {"replicas": {"n_workers": 1}}}
    run = jupyter_px.submit("print('done')\n", topology)
    assert run.wait(timeout=DEADLINE_S).state.value == "Succeeded"
    service = RunService()
    with sim.outage(), pytest.raises(BackendError, match="deleting what it left on the cluster"):
        service.delete(run.run_id)
    assert run.paths.root.exists(), "a run whose objects could not be deleted is kept"
    kept = len(sim.list("pods"))  # the finished ones (what still ran was deleted at the job's end)
    removed = service.delete(run.run_id)
    assert removed[0].startswith("PyTorchJob") and f"{kept} Pod{'' if kept == 1 else 's'}" in removed, removed
    assert not run.paths.root.exists()
    wait_for(lambda: not run_objects(sim), "nothing of the deleted run left on the cluster")
