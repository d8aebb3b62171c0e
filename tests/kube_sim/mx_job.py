"""MXJob (kubeflow.org/v1, training-operator v1.8.1) in the simulated training-operator:
MX_CONFIG and the DMLC_* env, the server role and the success rules."""

from __future__ import annotations

import json
from typing import Any

from .apiserver import ApiServer, now
from .events import record
from .training_job import Framework, add_env, set_condition


class MXNet(Framework):
    """MXJob, training-operator v1.8.1 (removed in v1.9): pkg/controller.v1/mxnet/mxnet.go
    SetPodEnv / genMXConfig / genClusterSpec / genLabelsSpec / addBytePSEnv and
    mxjob_controller.go UpdateJobStatus / IsMasterRole (the Server) / isSingleWorker;
    mxnet_types.go and mxnet_defaults.go (container `mxnet`, port `mxjob-port` 9091, restartPolicy
    Never, cleanPodPolicy None). Every container gets MX_CONFIG (cluster: `<job>-<rt>-<i>` and
    the port per replica type; labels: the `tuner-server-key` annotation per type; task),
    DMLC_PS_ROOT_PORT / DMLC_PS_ROOT_URI (scheduler 0), DMLC_NUM_SERVER, DMLC_NUM_WORKER,
    DMLC_ROLE (the replica type, lower case), DMLC_USE_KUBERNETES=1, and workers DMLC_WORKER_ID."""

    kind = "MXJob"
    plural = "mxjobs"
    specs_field = "mxReplicaSpecs"
    controller = "mxjob-controller"
    container = "mxnet"
    port_name = "mxjob-port"
    port = 9091
    restart_policy = "Never"

    def is_master_role(self, specs: dict[str, Any], rtype: str, index: int) -> bool:
        return rtype == "Server"

    def set_cluster_spec(self, job: dict[str, Any], template: dict[str, Any], rt: str, index: int) -> None:
        specs = job["spec"][self.specs_field]
        name = job["metadata"]["name"]
        cluster = {
            rtype.lower(): [{"url": f"{name}-{rtype.lower()}-{i}", "port": self.port_of(job, rtype)}
                            for i in range(int(spec.get("replicas", 1)))]
            for rtype, spec in specs.items()
        }  # fmt: skip
        labels = {
            rtype.lower(): ((spec["template"].get("metadata") or {}).get("annotations") or {}).get(
                "tuner-server-key", ""
            )
            for rtype, spec in specs.items()
        }
        config = {"cluster": dict(sorted(cluster.items())), "labels": dict(sorted(labels.items())),
                  "task": {"type": rt, "index": index}}  # fmt: skip
        scheduler = (cluster.get("scheduler") or [{"url": "", "port": 0}])[0]
        for container in template["spec"].get("containers") or []:
            add_env(container, "MX_CONFIG", json.dumps(config, separators=(",", ":")))
            add_env(container, "DMLC_PS_ROOT_PORT", str(scheduler["port"]))
            add_env(container, "DMLC_PS_ROOT_URI", scheduler["url"])
            add_env(container, "DMLC_NUM_SERVER", str(len(cluster.get("server") or [])))
            add_env(container, "DMLC_NUM_WORKER", str(len(cluster.get("worker") or [])))
            add_env(container, "DMLC_ROLE", rt)
            add_env(container, "DMLC_USE_KUBERNETES", "1")
            if rt == "worker":
                add_env(container, "DMLC_WORKER_ID", str(index))

    def update_status(self, job: dict[str, Any], specs: dict[str, Any], status: dict[str, Any], api: ApiServer) -> None:
        name = job["metadata"]["name"]
        counts_of = {r: int(s.get("replicas", 1)) for r, s in specs.items()}
        single = counts_of.get("Worker", 0) == 1 and not counts_of.get("Scheduler") and not counts_of.get("Server")
        for rtype, spec in specs.items():
            counts = status["replicaStatuses"].get(rtype) or {}
            succeeded, running, failed = counts.get("succeeded", 0), counts.get("active", 0), counts.get("failed", 0)
            if rtype == "Scheduler" or single:
                if running > 0:
                    set_condition(status, "Running", "True", "MXJobRunning", f"MXJob {name} is running.")
                if int(spec.get("replicas", 1)) - succeeded == 0:
                    message = f"MXJob {name} is successfully completed."
                    status.setdefault("completionTime", now())
                    set_condition(status, "Succeeded", "True", "MXJobSucceeded", message)
                    record(api, job, "MXJobSucceeded", message, "Normal", self.controller)
                    return
            if failed > 0:
                if spec.get("restartPolicy") == "ExitCode":
                    set_condition(
                        status,
                        "Restarting",
                        "True",
                        "MXJobRestarting",
                        f"mxjob {name} is restarting because {failed} {rtype} replica(s) failed.",
                    )
                else:
                    message = f"mxjob {name} is failed because {failed} {rtype} replica(s) failed."
                    status.setdefault("completionTime", now())
                    set_condition(status, "Failed", "True", "MXJobFailed", message)
