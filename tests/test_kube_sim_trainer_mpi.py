"""Kubeflow Trainer v2's MPI runtime (deepspeed-distributed: OpenMPI, the launcher runs as a node)
on the simulated cluster: the JobSet, Secret and hostfile a TrainJob gets (rules cited in
tests/kube_sim/trainer_controller.py, from kubeflow/trainer v2.1.0 and v2.3.0), and the
`kubeflow-trainer` backend running an MPI job end to end on Trainer 2.3 and 2.1."""

from __future__ import annotations

import base64

import pytest
from kube_sim import Cluster
from kube_sim.jobset_controller import RESOURCE as JOBSETS
from kube_sim.trainer_controller import TrainerController
from kube_sim_support import backend_cluster, wait_for
from mpi_standins import install_mpirun, sshd_waits

import jupyter_px
from jupyter_px.backends.kubernetes.render import render_manifests
from jupyter_px.backends.kubernetes.shared.settings import KubernetesSettings
from jupyter_px.runstore.metrics import MetricsReader
from jupyter_px.topology import parse_topology

pytestmark = pytest.mark.kube


def mpi_trainjob(name: str, nodes: int, **trainer) -> dict:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {
            "runtimeRef": {"name": "deepspeed-distributed"},
            "trainer": {"numNodes": nodes, "image": "my/mpi:1", "command": ["mpirun", "python", "train.py"],
                        "env": [{"name": "MINE", "value": "1"}], **trainer},
        },
    }  # fmt: skip


def by_name(items: list[dict]) -> dict[str, dict]:
    return {item["name"]: item for item in items}


@pytest.mark.parametrize("trainer", ["2.3", "2.1"])
def test_an_mpi_trainjob_runs_the_launcher_as_one_of_its_nodes(trainer):
    with Cluster(controllers=("gc",), trainer=trainer) as sim:
        trainjobs = sim.api.resource("trainer.kubeflow.org", "v1alpha1", "trainjobs")
        sim.api.create(trainjobs, mpi_trainjob("tj", 3, numProcPerNode=2), "default")
        TrainerController(sim.api).reconcile_all()
        jobs = by_name(sim.api.get(JOBSETS, "default", "tj")["spec"]["replicatedJobs"])
        # numNodes 3: the launcher and 2 nodes (runLauncherAsNode)
        assert jobs["launcher"]["template"]["spec"]["parallelism"] == 1
        assert jobs["node"]["template"]["spec"]["parallelism"] == 2
        launcher = jobs["launcher"]["template"]["spec"]["template"]["spec"]
        node = jobs["node"]["template"]["spec"]["template"]["spec"]
        (lc,), (nc,) = launcher["containers"], node["containers"]
        assert (lc["image"], lc["command"]) == ("my/mpi:1", ["mpirun", "python", "train.py"])
        # the nodes keep the runtime's image and sshd, and get the trainer's env
        assert (nc["image"], nc["command"]) == ("ghcr.io/kubeflow/trainer/deepspeed-runtime", ["/usr/sbin/sshd"])
        assert [e["name"] for e in nc["env"]] == ["MINE"]
        assert [(e["name"], e["value"]) for e in lc["env"]] == [
            ("MINE", "1"),
            ("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
            ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
            ("OMPI_MCA_orte_set_default_slots", "2"),
            ("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"),
        ]
        assert lc["volumeMounts"] == [
            {"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"},
            {"name": "mpi-hostfile", "mountPath": "/etc/mpi"},
        ]
        assert nc["volumeMounts"] == [{"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"}]
        secret_volume = by_name(node["volumes"])["mpi-ssh-auth"]["secret"]
        assert secret_volume["secretName"] == "tj-mpi-ssh-auth"
        assert secret_volume.get("defaultMode") == (0o400 if trainer == "2.3" else None)
        assert by_name(launcher["volumes"])["mpi-hostfile"]["configMap"]["name"] == "tj-mpi-hostfile"
        # the runtime's order (v2.3: node, then launcher): the hosts mpirun starts ranks on
        assert sim.get("configmaps", "tj-mpi-hostfile")["data"]["hostfile"] == (
            "tj-node-0-0.tj slots=2\ntj-node-0-1.tj slots=2\ntj-launcher-0-0.tj slots=2\n"
        )
        secret = sim.get("secrets", "tj-mpi-ssh-auth")
        assert secret["type"] == "kubernetes.io/ssh-auth" and secret["immutable"] is True
        assert base64.b64decode(secret["data"]["ssh-publickey"]).startswith(b"ecdsa-sha2-nistp521 ")


# ---- the kubeflow-trainer backend, end to end -------------------------------------------------------

CODE = (
    "import os\nfrom jupyter_px import tracking\n"
    "rank = int(os.environ['OMPI_COMM_WORLD_RANK'])\n"
    "print('hello from rank', rank, 'of', os.environ['OMPI_COMM_WORLD_SIZE'], 'with', os.environ.get('MY_SETTING'),"
    " flush=True)\n"
    "tracking.log_metrics(step=rank, loss=1.0 / (rank + 1))\n"
)
TOPOLOGY = {
    "framework": "horovod",
    "backend": "kubeflow-trainer",
    "environment": {"env": {"MY_SETTING": "forwarded"}, "replicas": {"n_workers": 2}},
}


def test_the_rendered_mpi_trainjob_asks_for_as_many_nodes_as_ranks_and_forwards_the_env():
    """2 workers, 1 slot each: numNodes 2 (the launcher is one of them), mpirun -np 2, the
    topology's env forwarded to the ranks (`-x`), the image on the nodes' pods too (runtimePatches)."""
    settings = KubernetesSettings(image="my/mpi:1")
    _, trainjob = render_manifests("kubeflow-trainer", parse_topology(TOPOLOGY), "run-1", "print(1)", {}, settings)
    trainer = trainjob["spec"]["trainer"]
    assert trainer["numNodes"] == 2
    command = trainer["command"]
    assert command[command.index("-np") + 1] == "2"
    forwarded = {command[i + 1] for i, arg in enumerate(command) if arg == "-x"}
    assert {"MY_SETTING", "PX_RUN_ID", "PX_MPI_WORLD_SIZE"} <= forwarded
    jobs = by_name(trainjob["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"])
    (node_container,) = jobs["node"]["template"]["spec"]["template"]["spec"]["containers"]
    assert node_container["image"] == "my/mpi:1"


@pytest.mark.parametrize("trainer", ["2.3", "2.1"])
def test_an_mpi_run_on_kubeflow_trainer_stores_every_ranks_output_and_metrics(tmp_path, monkeypatch, px_home, trainer):
    with backend_cluster(tmp_path, monkeypatch, px_home, namespaces=("default",), trainer=trainer) as sim:
        install_mpirun(sim)
        sim.api.admission.append(sshd_waits)
        run = jupyter_px.submit(CODE, TOPOLOGY)
        status = run.wait(timeout=180)
        assert status.state.value == "Succeeded", status
        text = run.logs("master", 0, tail=None)
        for rank in (0, 1):  # rank 1 runs on another host: MY_SETTING reached it through -x
            assert f"hello from rank {rank} of 2 with forwarded" in text, text
        reader = MetricsReader(run.paths)

        def losses():
            reader.poll()
            return sorted(reader.series("master-0", "loss").values)

        assert wait_for(lambda: len(losses()) == 2 and losses(), "the ranks' metrics") == [0.5, 1.0]


def test_mpi_node_pods_are_the_workers_in_the_hostfiles_order():
    """v2.3's runtime lists the `node` job first (its pods are workers 0..), v2.1's the launcher
    first (it hosts worker 0, the node pods workers 1..): the node Job's global index says which."""
    from jupyter_px.backends.kubernetes.shared.replica_pods import replica_pods

    topology = parse_topology(TOPOLOGY)
    mapping = replica_pods("kubeflow-trainer")

    def node(global_index: str, rank: str) -> dict:
        labels = {"jobset.sigs.k8s.io/replicatedjob-name": "node", "jobset.sigs.k8s.io/job-global-index": global_index,
                  "batch.kubernetes.io/job-completion-index": rank}  # fmt: skip
        return {"metadata": {"labels": labels}}

    assert mapping.replica_of(node("0", "0"), topology) == ("worker", 0)
    assert mapping.replica_of(node("1", "0"), topology) == ("worker", 1)
    launcher = {"metadata": {"labels": {"jobset.sigs.k8s.io/replicatedjob-name": "launcher"}}}
    assert mapping.replica_of(launcher, topology) == ("master", 0)


@pytest.mark.parametrize("trainer", ["2.3", "2.1"])
def test_the_webhook_refuses_the_mpi_plugins_variables_from_2_3_on(trainer):
    body = mpi_trainjob("tj", 2, env=[{"name": "OMPI_MCA_orte_set_default_slots", "value": "4"}])
    with Cluster(controllers=(), trainer=trainer) as sim:
        trainjobs = sim.api.resource("trainer.kubeflow.org", "v1alpha1", "trainjobs")
        if trainer == "2.1":
            sim.api.create(trainjobs, body, "default")  # not checked before v2.3.0
            return
        with pytest.raises(Exception, match=r"spec.trainer.env: Invalid value.*must not have reserved envs, invalid "
                           r"envs configured: \[OMPI_MCA_orte_set_default_slots\]"):  # fmt: skip
            sim.api.create(trainjobs, body, "default")
