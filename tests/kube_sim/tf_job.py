"""TFJob (kubeflow.org/v1) in the simulated training-operator: TF_CONFIG, the chief/master
role and the success rules."""

from __future__ import annotations

import json
from typing import Any

from .apiserver import ApiServer, now
from .events import record
from .training_job import Framework, add_env, set_condition


class TensorFlow(Framework):
    """training-operator v1.9.0 pkg/controller.v1/tensorflow: tensorflow.go genTFConfigJSONStr /
    genClusterSpec (TF_CONFIG on the `tensorflow` container only, for distributed jobs: every
    replica type's `<job>-<rt>-<i>.<ns>.svc:<port>`, task type lower case, environment `cloud`),
    tfjob_controller.go IsMasterRole (chief/master, else worker 0) and UpdateJobStatus (simplified:
    success when the chief/master succeeds, else when all workers did; failure as PyTorchJob);
    tfjob defaults (tensorflow_defaults.go): container `tensorflow`, port `tfjob-port` 2222,
    restartPolicy Never, cleanPodPolicy None (setDefaultCleanPodPolicy: `None` unless given, at
    v1.9.0 as for the other kinds; `Running` was v1.7 and earlier)."""

    kind = "TFJob"
    plural = "tfjobs"
    specs_field = "tfReplicaSpecs"
    controller = "tfjob-controller"
    container = "tensorflow"
    port_name = "tfjob-port"
    port = 2222
    restart_policy = "Never"
    default_clean_pod_policy = "None"

    def is_master_role(self, specs: dict[str, Any], rtype: str, index: int) -> bool:
        if "Chief" in specs or "Master" in specs:
            return rtype in ("Chief", "Master")
        return rtype == "Worker" and index == 0

    def set_cluster_spec(self, job: dict[str, Any], template: dict[str, Any], rt: str, index: int) -> None:
        specs = job["spec"][self.specs_field]
        distributed = sum(int(s.get("replicas", 1)) for s in specs.values()) > 1
        if not distributed:  # isDistributed: a single replica gets no TF_CONFIG
            return
        namespace, name = job["metadata"]["namespace"], job["metadata"]["name"]
        cluster = {}
        for rtype, spec in sorted(specs.items(), key=lambda item: item[0].lower()):
            port = self.port_of(job, rtype)
            cluster[rtype.lower()] = [
                f"{name}-{rtype.lower()}-{i}.{namespace}.svc:{port}" for i in range(int(spec.get("replicas", 1)))
            ]
        config = {
            "cluster": dict(sorted(cluster.items())),
            "task": {"type": rt, "index": index},
            "environment": "cloud",
        }
        for container in template["spec"].get("containers") or []:
            if container.get("name") == self.container:
                add_env(container, "TF_CONFIG", json.dumps(config, separators=(",", ":")))
                break

    def update_status(self, job: dict[str, Any], specs: dict[str, Any], status: dict[str, Any], api: ApiServer) -> None:
        name = job["metadata"]["name"]
        chief = next((r for r in ("Chief", "Master") if r in specs), None)
        for rtype, spec in specs.items():
            counts = status["replicaStatuses"].get(rtype) or {}
            succeeded, running, failed = counts.get("succeeded", 0), counts.get("active", 0), counts.get("failed", 0)
            replicas = int(spec.get("replicas", 1))
            if running > 0:
                set_condition(status, "Running", "True", "TFJobRunning", f"TFJob {name} is running.")
            done = (chief is not None and rtype == chief and succeeded == replicas) or (
                chief is None and rtype == "Worker" and succeeded == replicas
            )
            if done:
                message = f"TFJob {name} successfully completed."
                status.setdefault("completionTime", now())
                set_condition(status, "Succeeded", "True", "TFJobSucceeded", message)
                record(api, job, "TFJobSucceeded", message, "Normal", self.controller)
            if failed > 0 and replicas > succeeded + running:
                if spec.get("restartPolicy") in ("OnFailure", "Always", "ExitCode"):
                    set_condition(
                        status,
                        "Restarting",
                        "True",
                        "TFJobRestarting",
                        f"TFJob {name} is restarting because {failed} {rtype} replica(s) failed.",
                    )
                else:
                    message = f"TFJob {name} has failed because {failed} {rtype} replica(s) failed."
                    status.setdefault("completionTime", now())
                    set_condition(status, "Failed", "True", "TFJobFailed", message)
                    record(api, job, "TFJobFailed", message, "Normal", self.controller)
