"""PyTorchJob (kubeflow.org/v1) in the simulated training-operator: the MASTER_*/PET_* env (and
an elastic job's rendezvous variables), the workers' wait-for-master init container, the master
role and the success rules."""

from __future__ import annotations

from typing import Any

from .apiserver import ApiServer, now
from .events import record
from .training_job import Framework, add_env, set_condition


class PyTorch(Framework):
    """training-operator v1.9.0 pkg/controller.v1/pytorch: envvar.go setPodEnv, elastic.go,
    master.go, initcontainer.go, pytorchjob_controller.go UpdateJobStatus/IsMasterRole;
    pkg/apis/kubeflow.org/v1/pytorch_defaults.go and pytorch_types.go (container `pytorch`, port
    `pytorchjob-port` 23456, restartPolicy OnFailure, cleanPodPolicy None, nprocPerNode `auto`)."""

    kind = "PyTorchJob"
    plural = "pytorchjobs"
    specs_field = "pytorchReplicaSpecs"
    controller = "pytorchjob-controller"
    container = "pytorch"
    port_name = "pytorchjob-port"
    port = 23456
    #: config.Config.PyTorchInitContainerImage / MaxTries defaults (cmd/training-operator.v1/main.go)
    init_image = "alpine:3.10"
    init_max_tries = 100

    def defaults(self, job: dict[str, Any]) -> None:
        super().defaults(job)
        elastic = job["spec"].get("elasticPolicy")
        if elastic is not None:
            # pytorch_defaults.go setElasticPolicy: the one bound given is both, neither: the workers'
            workers = (job["spec"][self.specs_field].get("Worker") or {}).get("replicas")
            low, high = elastic.get("minReplicas"), elastic.get("maxReplicas")
            elastic["minReplicas"] = low if low is not None else high if high is not None else workers
            elastic["maxReplicas"] = high if high is not None else low if low is not None else workers
        if elastic is None or elastic.get("nProcPerNode") is None:
            job["spec"].setdefault("nprocPerNode", "auto")

    def elastic_env(self, job: dict[str, Any]) -> list[tuple[str, str]]:
        """elastic.go ElasticEnvVarGenerator.Generate, in its order: the rendezvous endpoint (the
        policy's host, else `<job>-worker-0`; its port, else the Worker's `pytorchjob-port`), its
        backend (c10d by default), the nodes (`MIN:MAX`), then what the policy sets."""
        policy, name = job["spec"]["elasticPolicy"], job["metadata"]["name"]
        port = policy.get("rdzvPort") or self.port_of(job, "Worker")
        if port is None:
            raise ValueError("port not found")
        out = [
            ("PET_RDZV_ENDPOINT", f"{policy.get('rdzvHost') or name + '-worker-0'}:{port}"),
            ("PET_RDZV_BACKEND", policy.get("rdzvBackend") or "c10d"),
            ("PET_NNODES", f"{policy['minReplicas']}:{policy['maxReplicas']}"),
        ]
        if policy.get("maxRestarts") is not None:
            out.append(("PET_MAX_RESTARTS", str(policy["maxRestarts"])))
        if policy.get("nProcPerNode") is not None:
            out.append(("PET_NPROC_PER_NODE", str(policy["nProcPerNode"])))
        if policy.get("rdzvId") is not None:
            out.append(("PET_RDZV_ID", policy["rdzvId"]))
        if policy.get("rdzvConf"):
            out.append(("PET_RDZV_CONF", ",".join(f"{c['key']}={c['value']}" for c in policy["rdzvConf"])))
        if policy.get("standalone"):
            out.append(("PET_STANDALONE", ""))
        return out

    def is_master_role(self, specs: dict[str, Any], rtype: str, index: int) -> bool:
        if "Master" in specs:
            return rtype == "Master"
        return rtype == "Worker" and index == 0

    def set_cluster_spec(self, job: dict[str, Any], template: dict[str, Any], rt: str, index: int) -> None:
        spec = job["spec"]
        specs = spec[self.specs_field]
        total = sum(int(s.get("replicas", 1)) for s in specs.values())
        try:
            nproc = int(spec.get("nprocPerNode"))
        except (TypeError, ValueError):
            nproc = 1  # getNprocPerNodeInt: "auto" and other non-numbers count 1
        master = f"{job['metadata']['name']}-master-0"
        for container in template["spec"].get("containers") or []:
            # envvar.go setPodEnv: every container, in this order
            add_env(container, "PYTHONUNBUFFERED", "1")
            if "Master" in specs:
                port = self.port_of(job, "Master")
                if port is None:
                    raise ValueError("port not found")
                add_env(container, "MASTER_PORT", str(port))
                add_env(container, "PET_MASTER_PORT", str(port))
                add_env(container, "MASTER_ADDR", master)
                add_env(container, "PET_MASTER_ADDR", master)
                rank = index + 1 if rt == "worker" else index
                add_env(container, "WORLD_SIZE", str(total * nproc))
                add_env(container, "RANK", str(rank))
                add_env(container, "PET_NODE_RANK", str(rank))
            if spec.get("nprocPerNode") is not None:
                add_env(container, "PET_NPROC_PER_NODE", str(spec["nprocPerNode"]))
            if spec.get("elasticPolicy") is None:
                add_env(container, "PET_NNODES", str(total))
            else:
                for name, value in self.elastic_env(job):
                    add_env(container, name, value)
        if "Master" in specs and rt == "worker":
            # initcontainer.go: workers wait until the master's name resolves
            template["spec"].setdefault("initContainers", []).append(
                {
                    "name": "init-pytorch",
                    "image": self.init_image,
                    "imagePullPolicy": "IfNotPresent",
                    "resources": {
                        "limits": {"cpu": "100m", "memory": "20Mi"},
                        "requests": {"cpu": "50m", "memory": "10Mi"},
                    },
                    "command": [
                        "sh",
                        "-c",
                        f"err=1;for i in $(seq {self.init_max_tries}); do if nslookup {master}; then "
                        "err=0 && break; fi;echo waiting for master; sleep 2; done; exit $err",
                    ],
                }
            )

    def update_status(self, job: dict[str, Any], specs: dict[str, Any], status: dict[str, Any], api: ApiServer) -> None:
        name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
        for rtype, spec in specs.items():
            counts = status["replicaStatuses"].get(rtype) or {}
            succeeded, running, failed = counts.get("succeeded", 0), counts.get("active", 0), counts.get("failed", 0)
            replicas = int(spec.get("replicas", 1))
            expected = replicas - succeeded
            if "Master" in specs:
                if rtype == "Master":
                    if running > 0:
                        set_condition(status, "Running", "True", "PyTorchJobRunning", f"PyTorchJob {name} is running.")
                    if expected == 0:
                        message = f"PyTorchJob {name} is successfully completed."
                        record(api, job, "PyTorchJobSucceeded", message, "Normal", self.controller)
                        status.setdefault("completionTime", now())
                        set_condition(status, "Succeeded", "True", "PyTorchJobSucceeded", message)
                        return
            elif rtype == "Worker":
                if expected == 0 or (job["spec"].get("elasticPolicy") is not None and succeeded > 0):
                    message = f"PyTorchJob {namespace}/{name} successfully completed."
                    record(api, job, "PyTorchJobSucceeded", message, "Normal", self.controller)
                    status.setdefault("completionTime", now())
                    set_condition(status, "Succeeded", "True", "PyTorchJobSucceeded", message)
                elif running > 0:
                    set_condition(
                        status, "Running", "True", "PyTorchJobRunning", f"PyTorchJob {namespace}/{name} is running."
                    )
            if failed > 0 and replicas > succeeded + running:
                if spec.get("restartPolicy") != "Never":
                    message = f"PyTorchJob {name} is restarting because {failed} {rtype} replica(s) failed."
                    record(api, job, "PyTorchJobRestarting", message, "Warning", self.controller)
                    set_condition(status, "Restarting", "True", "PyTorchJobRestarting", message)
                else:
                    message = f"PyTorchJob {name} is failed because {failed} {rtype} replica(s) failed."
                    record(api, job, "PyTorchJobFailed", message, "Normal", self.controller)
                    status.setdefault("completionTime", now())
                    set_condition(status, "Failed", "True", "PyTorchJobFailed", message)
