"""The simulated Kubeflow Trainer v2 controller (torch runtime), from TrainJob to JobSet to pods
(rules cited in tests/kube_sim/trainer_controller.py)."""

from __future__ import annotations

import pytest
from kube_sim import Cluster
from kube_sim.jobset_controller import RESOURCE as JOBSETS
from kube_sim.trainer_controller import TrainerController
from kube_sim_support import DEADLINE_S
from waiting import wait_for

pytestmark = pytest.mark.kube  # the simulated cluster: HTTP servers, controllers, processes


def trainjob(name: str, nodes: int = 2, command: list[str] | None = None, **spec) -> dict:
    trainer = {"numNodes": nodes, "image": "python:3.11", "env": [{"name": "MINE", "value": "1"}]}
    if command:
        trainer["command"] = command
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": trainer, **spec},
    }


def test_a_trainjob_becomes_a_jobset_with_the_torch_env():
    pod = {
        "metadata": {"labels": {"run": "r1"}},
        "spec": {"containers": [{"name": "node", "env": [{"name": "FROM_PATCH", "value": "2"}]}]},
    }
    jobs = [{"name": "node", "template": {"spec": {"template": pod}}}]
    template = {"metadata": {"labels": {"px": "yes"}}, "spec": {"replicatedJobs": jobs}}
    patch = {"manager": "px.jupyter.org/backend", "trainingRuntimeSpec": {"template": template}}
    with Cluster(controllers=("gc",)) as sim:
        trainjobs = sim.api.resource("trainer.kubeflow.org", "v1alpha1", "trainjobs")
        created = sim.api.create(trainjobs, trainjob("tj", runtimePatches=[patch]), "default")
        TrainerController(sim.api).reconcile_all()
        jobset = sim.api.get(JOBSETS, "default", "tj")
        assert jobset["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
        assert jobset["metadata"]["labels"] == {"px": "yes"}
        (node,) = jobset["spec"]["replicatedJobs"]
        assert (node["replicas"], node["template"]["spec"]["parallelism"], node["template"]["spec"]["completions"]) == (
            1,
            2,
            2,
        )
        pod = node["template"]["spec"]["template"]
        assert pod["metadata"]["labels"]["run"] == "r1"
        (container,) = pod["spec"]["containers"]
        assert container["image"] == "python:3.11"
        env = {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}
        assert env == {
            "FROM_PATCH": "2",
            "MINE": "1",
            "PET_NNODES": "2",
            "PET_NPROC_PER_NODE": "1",
            "PET_NODE_RANK": {
                "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
            },
            "PET_MASTER_ADDR": "tj-node-0-0.tj",
            "PET_MASTER_PORT": "29500",
        }
        assert container["ports"] == [{"containerPort": 29500}]


def test_a_torch_trainjob_runs_its_nodes_to_complete():
    code = (
        "import os, socket, time\n"
        "rank = int(os.environ['PET_NODE_RANK'])\n"
        "addr, port = os.environ['PET_MASTER_ADDR'], int(os.environ['PET_MASTER_PORT'])\n"
        "if rank == 0:\n"
        "    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
        "    s.bind((socket.gethostbyname(socket.gethostname()), port)); s.listen()\n"
        "    c, _ = s.accept(); print('master got', c.recv(20).decode())\n"
        "else:\n"
        "    for _ in range(600):\n"
        "        try: c = socket.create_connection((addr, port)); break\n"
        "        except OSError: time.sleep(0.1)\n"
        "    c.sendall(f'node {rank}'.encode()); print('sent')\n"
    )
    with Cluster(kubelet={"backoff_base": 0.2}) as sim:
        if not sim.kubelet.isolated:
            pytest.skip(f"pods cannot resolve each other's names here: {sim.kubelet.not_isolated_because}")
        trainjobs = sim.api.resource("trainer.kubeflow.org", "v1alpha1", "trainjobs")
        sim.api.create(trainjobs, trainjob("tj", command=["python", "-c", code]), "default")
        conditions = wait_for(
            lambda: (sim.api.get(trainjobs, "default", "tj").get("status") or {}).get("conditions"),
            "the TrainJob to finish",
            timeout=DEADLINE_S,
        )
        assert [(c["type"], c["reason"]) for c in conditions] == [("Complete", "AllJobsCompleted")]
        logs = sorted(b"".join(sim.kubelet.logs(p, "node", {})).decode() for p in sim.list("pods"))
        assert logs == ["master got node 1\n", "sent\n"]
