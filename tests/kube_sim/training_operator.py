"""The Kubeflow training-operator (kubeflow.org/v1 jobs), written from its v1.9.0 sources.

The common job controller (training-operator v1.9.0 pkg/controller.v1/common/job.go
ReconcileJobs, pod.go ReconcilePods/createNewPod, service.go CreateNewService; pkg/core/job.go
PastBackoffLimit; pkg/util/status.go setCondition/filterOutCondition; pkg/core/status.go
UpdateJobReplicaStatuses):
- one pod per replica, named `<job>-<replica type, lower case>-<index>`, labelled
  `training.kubeflow.org/{operator-name, job-name, replica-type, replica-index}` and
  `training.kubeflow.org/job-role: master` on the master role, owned by the job (controller,
  blockOwnerDeletion); its restartPolicy the replica's (ExitCode -> Never);
- one headless Service per replica with the same name and labels, the ports of the default
  container's port named like the framework's default port name;
- a pod that Failed under OnFailure/Always (or ExitCode with a retryable code >= 128) is deleted
  and recreated, the job `Restarting`;
- backoffLimit: the restarts of Running pods' containers summed across all replicas (only those
  whose restartPolicy is OnFailure/Always/ExitCode) `>=` the limit (`> 0` when the limit is 0);
  past it (or past activeDeadlineSeconds) every pod and service is deleted and the job Failed;
- finished jobs: `runPolicy.cleanPodPolicy` None deletes nothing, Running deletes the Running and
  Pending pods, All deletes all (with the same-named services); `ttlSecondsAfterFinished` deletes
  the job that long after completionTime;
- conditions: Created first; Running and Restarting replace each other; Succeeded/Failed set
  Running False; nothing changes once Failed.
Frameworks: PyTorchJob (pkg/controller.v1/pytorch), TFJob (pkg/controller.v1/tensorflow), MPIJob v1
(pkg/controller.v1/mpi), MXJob (v1.8.1 pkg/controller.v1/mxnet). A cluster serves one MPIJob
kind: this one, or mpi-operator's v2beta1 (not simulated).
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any

from .apiserver import ApiServer, now, rfc3339
from .controller import ControllerLoop
from .errors import ApiError
from .events import record

OPERATOR = "kubeflow.org/training-operator"
L_OPERATOR = "training.kubeflow.org/operator-name"
L_JOB = "training.kubeflow.org/job-name"
L_TYPE = "training.kubeflow.org/replica-type"
L_INDEX = "training.kubeflow.org/replica-index"
L_ROLE = "training.kubeflow.org/job-role"


class Framework:
    kind = ""
    plural = ""
    specs_field = ""
    controller = ""
    container = ""
    port_name = ""
    port = 0
    restart_policy = "OnFailure"
    default_clean_pod_policy = "None"

    def defaults(self, job: dict[str, Any]) -> None:
        """In memory only, as the operator's Scheme.Default (never written back)."""
        run_policy = job["spec"].setdefault("runPolicy", {})
        run_policy.setdefault("cleanPodPolicy", self.default_clean_pod_policy)
        specs = job["spec"].get(self.specs_field) or {}
        for spec in specs.values():
            spec.setdefault("replicas", 1)
            spec.setdefault("restartPolicy", self.restart_policy)
            pod_spec = spec.setdefault("template", {}).setdefault("spec", {})
            for container in pod_spec.get("containers") or []:
                if container.get("name") == self.container:
                    ports = container.setdefault("ports", [])
                    if not any(p.get("name") == self.port_name for p in ports):
                        # setDefaultPort: the framework's port on its default container
                        ports.append({"name": self.port_name, "containerPort": self.port})

    def is_master_role(self, specs: dict[str, Any], rtype: str, index: int) -> bool:
        return False

    def set_cluster_spec(self, job: dict[str, Any], template: dict[str, Any], rt: str, index: int) -> None:
        pass

    def update_status(self, job: dict[str, Any], specs: dict[str, Any], status: dict[str, Any], api: ApiServer) -> None:
        pass

    def reconcile_replicas(
        self, operator: TrainingOperator, job: dict, status: dict, pods: list, services: list, specs: dict
    ) -> None:
        """common/job.go: ReconcilePods and ReconcileServices for each replica type."""
        for rtype, spec in specs.items():
            operator._reconcile_pods(self, job, status, pods, rtype, spec, specs)
            operator._reconcile_services(self, job, services, rtype, spec)
        for rtype in specs:
            # UpdateJobStatus: the label selector of each replica type (metav1.FormatLabelSelector, sorted)
            labels = {L_JOB: job["metadata"]["name"], L_OPERATOR: self.controller, L_TYPE: rtype.lower()}
            status["replicaStatuses"][rtype]["selector"] = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))

    def port_of(self, job: dict[str, Any], rtype: str) -> int | None:
        for container in job["spec"][self.specs_field][rtype]["template"]["spec"].get("containers") or []:
            if container.get("name") == self.container:
                for port in container.get("ports") or []:
                    if port.get("name") == self.port_name:
                        return int(port["containerPort"])
        return None


def _env(container: dict[str, Any], name: str, value: str) -> None:
    container.setdefault("env", []).append({"name": name, "value": value})


def set_condition(status: dict[str, Any], kind: str, value: str, reason: str, message: str) -> None:
    """pkg/util/status.go setCondition + filterOutCondition."""
    conditions = status.setdefault("conditions", [])
    if any(c["type"] == "Failed" and c["status"] == "True" for c in conditions):
        return
    current = next((c for c in conditions if c["type"] == kind), None)
    if current and current["status"] == value and current.get("reason") == reason:
        return
    stamp = now()
    condition = {
        "type": kind,
        "status": value,
        "reason": reason,
        "message": message,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
    }
    if current and current["status"] == value:
        condition["lastTransitionTime"] = current["lastTransitionTime"]
    kept = []
    for c in conditions:
        if (kind, c["type"]) in (("Restarting", "Running"), ("Running", "Restarting")) or c["type"] == kind:
            continue
        if kind in ("Failed", "Succeeded") and c["type"] == "Running":
            c = {**c, "status": "False"}
        kept.append(c)
    status["conditions"] = kept + [condition]


def is_true(status: dict[str, Any], kind: str) -> bool:
    return any(c["type"] == kind and c["status"] == "True" for c in status.get("conditions") or [])


class PyTorch(Framework):
    """training-operator v1.9.0 pkg/controller.v1/pytorch: envvar.go setPodEnv, master.go,
    initcontainer.go, pytorchjob_controller.go UpdateJobStatus/IsMasterRole;
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
        if job["spec"].get("elasticPolicy") is None or job["spec"]["elasticPolicy"].get("nProcPerNode") is None:
            job["spec"].setdefault("nprocPerNode", "auto")

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
            _env(container, "PYTHONUNBUFFERED", "1")
            if "Master" in specs:
                port = self.port_of(job, "Master")
                if port is None:
                    raise ValueError("port not found")
                _env(container, "MASTER_PORT", str(port))
                _env(container, "PET_MASTER_PORT", str(port))
                _env(container, "MASTER_ADDR", master)
                _env(container, "PET_MASTER_ADDR", master)
                rank = index + 1 if rt == "worker" else index
                _env(container, "WORLD_SIZE", str(total * nproc))
                _env(container, "RANK", str(rank))
                _env(container, "PET_NODE_RANK", str(rank))
            if spec.get("nprocPerNode") is not None:
                _env(container, "PET_NPROC_PER_NODE", str(spec["nprocPerNode"]))
            if spec.get("elasticPolicy") is None:
                _env(container, "PET_NNODES", str(total))
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


class TensorFlow(Framework):
    """training-operator v1.9.0 pkg/controller.v1/tensorflow: tensorflow.go genTFConfigJSONStr /
    genClusterSpec (TF_CONFIG on the `tensorflow` container only, for distributed jobs: every
    replica type's `<job>-<rt>-<i>.<ns>.svc:<port>`, task type lower case, environment `cloud`),
    tfjob_controller.go IsMasterRole (chief/master, else worker 0) and UpdateJobStatus (simplified:
    success when the chief/master succeeds, else when all workers did; failure as PyTorchJob);
    tfjob defaults: container `tensorflow`, port `tfjob-port` 2222, restartPolicy Never,
    cleanPodPolicy Running."""

    kind = "TFJob"
    plural = "tfjobs"
    specs_field = "tfReplicaSpecs"
    controller = "tfjob-controller"
    container = "tensorflow"
    port_name = "tfjob-port"
    port = 2222
    restart_policy = "Never"
    default_clean_pod_policy = "Running"

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
                _env(container, "TF_CONFIG", json.dumps(config, separators=(",", ":")))
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


class MPI(Framework):
    """MPIJob kubeflow.org/v1, training-operator v1.9.0 pkg/controller.v1/mpi/mpijob_controller.go
    (ReconcilePods, newLauncher, newWorker, newConfigMap, updateDiscoverHostsInConfigMap,
    newLauncherServiceAccount/Role/RoleBinding, updateMPIJobStatus) and mpijob.go:
    - the launcher `<job>-launcher` is labelled replica-type `launcher` and job-role `master`
      but has NO replica-index label; workers `<job>-worker-<i>` have it;
    - no Services (ReconcileServices does nothing): workers are reached by `kubectl exec`;
    - ConfigMap `<job>-config`: `hostfile` (`<job>-worker-<i> slots=<slotsPerWorker, 1>`, the
      launcher first when it has a GPU limit), `kubexec.sh`, and `discover_hosts.sh` listing the
      Running workers; mounted at /etc/mpi;
    - the launcher's first container gets OMPI_MCA_plm_rsh_agent=/etc/mpi/kubexec.sh,
      OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile, NVIDIA_VISIBLE_DEVICES and
      NVIDIA_DRIVER_CAPABILITIES empty without a GPU limit, I_MPI_HYDRA_BOOTSTRAP=rsh and
      I_MPI_HYDRA_BOOTSTRAP_EXEC=/etc/mpi/kubexec.sh unless set; a `kubectl-delivery` init
      container; serviceAccountName `<job>-launcher` unless set (and that ServiceAccount, Role,
      RoleBinding);
    - a worker without a command runs `sleep 365d`;
    - defaults (mpi_defaults.go): cleanPodPolicy None, launcher 1 / worker 0 replicas,
      restartPolicy Never; container `mpi`;
    - the job: Running when the launcher and every worker run, Succeeded/Failed with the launcher
      (`MPIJob <ns>/<name> successfully completed.` / `MPIJob <ns>/<name> has failed`)."""

    kind = "MPIJob"
    plural = "mpijobs"
    specs_field = "mpiReplicaSpecs"
    controller = "mpijob-controller"
    container = "mpi"
    port_name = "mpi-port"
    port = 9999
    restart_policy = "Never"
    #: config.go MPIKubectlDeliveryImageDefault
    kubectl_delivery_image = "kubeflow/kubectl-delivery:latest"

    def defaults(self, job: dict[str, Any]) -> None:
        spec = job["spec"]
        run_policy = spec.setdefault("runPolicy", {})
        if spec.get("cleanPodPolicy") is None and run_policy.get("cleanPodPolicy") is None:
            spec["cleanPodPolicy"] = run_policy["cleanPodPolicy"] = "None"
        elif run_policy.get("cleanPodPolicy") is None:
            run_policy["cleanPodPolicy"] = spec["cleanPodPolicy"]
        specs = spec.get(self.specs_field) or {}
        for rtype, replicas in (("Launcher", 1), ("Worker", 0)):
            if rtype in specs:
                specs[rtype].setdefault("replicas", replicas)
                specs[rtype].setdefault("restartPolicy", self.restart_policy)

    def is_master_role(self, specs: dict[str, Any], rtype: str, index: int) -> bool:
        return rtype == "Launcher"

    def _gpu_launcher(self, job: dict) -> bool:
        for container in job["spec"][self.specs_field]["Launcher"]["template"]["spec"].get("containers") or []:
            for key in (container.get("resources") or {}).get("limits") or {}:
                if key.endswith(".com/gpu") or "gpu" in key:
                    return True
        return False

    def _owner(self, job: dict) -> list[dict]:
        # metav1.NewControllerRef: controller and blockOwnerDeletion true
        return [
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "MPIJob",
                "name": job["metadata"]["name"],
                "uid": job["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]

    def config_map(self, job: dict, workers: int) -> dict:
        name = job["metadata"]["name"]
        kubexec = "#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n/opt/kube/kubectl exec ${POD_NAME}"
        if job["spec"].get("mainContainer"):
            kubexec += f" --container {job['spec']['mainContainer']}"
        kubexec += ' -- /bin/sh -c "$*"'
        slots = int(job["spec"].get("slotsPerWorker") or 1)
        hostfile = f"{name}-launcher slots={slots}\n" if self._gpu_launcher(job) else ""
        hostfile += "".join(f"{name}-worker-{i} slots={slots}\n" for i in range(workers))
        return {
            "metadata": {"name": f"{name}-config", "labels": {"app": name}, "ownerReferences": self._owner(job)},
            "data": {"hostfile": hostfile, "kubexec.sh": kubexec},
        }

    def reconcile_replicas(
        self, operator: TrainingOperator, job: dict, status: dict, pods: list, services: list, specs: dict
    ) -> None:
        api = operator.api
        name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
        pods_resource = api.resource("", "v1", "pods")
        for rtype in specs:
            status["replicaStatuses"][rtype] = {}
        launcher = api.try_get(pods_resource, namespace, f"{name}-launcher")
        workers: list[dict] = []
        done = launcher is not None and launcher["status"].get("phase") in ("Succeeded", "Failed")
        if not done:
            worker_spec = specs.get("Worker")
            replicas = int(worker_spec.get("replicas", 0)) if worker_spec else 0
            launcher_spec = specs["Launcher"]["template"]["spec"]
            account = launcher_spec.get("serviceAccountName") or f"{name}-launcher"
            meta = {"labels": {"app": name}, "ownerReferences": self._owner(job)}
            operator._ensure("serviceaccounts", job, {"metadata": {"name": account, **meta}}, self)
            config = operator._ensure("configmaps", job, self.config_map(job, replicas), self)
            operator._ensure(
                "roles",
                job,
                {
                    "metadata": {"name": f"{name}-launcher", **meta},
                    "rules": [
                        {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]},
                        {
                            "verbs": ["create"],
                            "apiGroups": [""],
                            "resources": ["pods/exec"],
                            "resourceNames": [f"{name}-worker-{i}" for i in range(replicas)],
                        },
                    ],
                },
                self,
                "rbac.authorization.k8s.io",
            )
            operator._ensure(
                "rolebindings",
                job,
                {
                    "metadata": {"name": f"{name}-launcher", **meta},
                    "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"{name}-launcher"},
                },
                self,
                "rbac.authorization.k8s.io",
            )
            for i in range(replicas):
                worker = api.try_get(pods_resource, namespace, f"{name}-worker-{i}")
                if worker is None:
                    operator._create("pods", job, self.worker(job, i), self)
                    worker = api.try_get(pods_resource, namespace, f"{name}-worker-{i}")
                if worker is not None:
                    workers.append(worker)
            if config is not None:
                running = sorted(w["metadata"]["name"] for w in workers if w["status"].get("phase") == "Running")
                discover = "#!/bin/sh"
                if self._gpu_launcher(job):
                    discover += f"\necho {name}-launcher:{int(job['spec'].get('slotsPerWorker') or 1)}\n"
                for pod_name in running:
                    discover += f"\necho {pod_name}:{int(job['spec'].get('slotsPerWorker') or 1)}"
                if (config.get("data") or {}).get("discover_hosts.sh") != discover:
                    config.setdefault("data", {})["discover_hosts.sh"] = discover
                    api.update(api.resource("", "v1", "configmaps"), config, namespace)
            if launcher is None:
                operator._create("pods", job, self.launcher(job), self)
                launcher = api.try_get(pods_resource, namespace, f"{name}-launcher")
        counts_launcher = status["replicaStatuses"].setdefault("Launcher", {})
        if launcher is not None:
            phase = launcher["status"].get("phase")
            if phase == "Succeeded":
                counts_launcher["succeeded"] = 1
                message = f"MPIJob {namespace}/{name} successfully completed."
                status.setdefault("completionTime", now())
                set_condition(status, "Succeeded", "True", "MPIJobSucceeded", message)
            elif phase == "Failed":
                counts_launcher["failed"] = 1
                reason = launcher["status"].get("reason") or "MPIJobFailed"
                status.setdefault("completionTime", now())
                set_condition(
                    status,
                    "Failed",
                    "True",
                    "MPIJobEvicted" if reason == "Evicted" else reason,
                    f"MPIJob {namespace}/{name} has failed",
                )
            elif phase == "Running":
                counts_launcher["active"] = 1
        counts_worker = status["replicaStatuses"].setdefault("Worker", {})
        for worker in workers:
            key = {"Failed": "failed", "Succeeded": "succeeded", "Running": "active"}.get(worker["status"].get("phase"))
            if key:
                counts_worker[key] = counts_worker.get(key, 0) + 1
        if (
            launcher is not None
            and launcher["status"].get("phase") == "Running"
            and counts_worker.get("active", 0) == len(workers)
        ):
            set_condition(status, "Running", "True", "MPIJobRunning", f"MPIJob {namespace}/{name} is running.")

    def update_status(self, job: dict[str, Any], specs: dict[str, Any], status: dict[str, Any], api: ApiServer) -> None:
        """mpijob_controller.go UpdateJobStatus: a failed replica fails the job (restarts only
        under ExitCode)."""
        name = job["metadata"]["name"]
        for rtype, spec in specs.items():
            failed = (status["replicaStatuses"].get(rtype) or {}).get("failed", 0)
            if failed > 0:
                if spec.get("restartPolicy") == "ExitCode":
                    set_condition(
                        status,
                        "Restarting",
                        "True",
                        "MPIJobRestarting",
                        f"MPIJob {name} is restarting because {failed} {rtype} replica(s) failed.",
                    )
                else:
                    status.setdefault("completionTime", now())
                    set_condition(
                        status,
                        "Failed",
                        "True",
                        "MPIJobFailed",
                        f"MPIJob {name} is failed because {failed} {rtype} replica(s) failed.",
                    )

    def worker(self, job: dict, index: int) -> dict:
        name = job["metadata"]["name"]
        template = copy.deepcopy(job["spec"][self.specs_field]["Worker"]["template"])
        labels = {L_OPERATOR: self.controller, L_JOB: name, L_TYPE: "worker", L_INDEX: str(index)}
        spec = template["spec"]
        policy = job["spec"][self.specs_field]["Worker"].get("restartPolicy")
        spec["restartPolicy"] = "Never" if policy == "ExitCode" else policy
        container = spec["containers"][0]
        if not container.get("command"):
            container["command"], container["args"] = ["sleep"], ["365d"]
        container.setdefault("volumeMounts", []).append({"name": "mpi-job-config", "mountPath": "/etc/mpi"})
        spec.setdefault("volumes", []).append(
            {
                "name": "mpi-job-config",
                "configMap": {
                    "name": f"{name}-config",
                    "items": [{"key": "kubexec.sh", "path": "kubexec.sh", "mode": 0o555}],
                },
            }
        )
        meta = template.get("metadata") or {}
        return {
            "metadata": {
                "name": f"{name}-worker-{index}",
                "labels": {**(meta.get("labels") or {}), **labels},
                **({"annotations": meta["annotations"]} if meta.get("annotations") else {}),
                "ownerReferences": self._owner(job),
            },
            "spec": spec,
        }

    def launcher(self, job: dict) -> dict:
        name = job["metadata"]["name"]
        replica = job["spec"][self.specs_field]["Launcher"]
        template = copy.deepcopy(replica["template"])
        labels = {L_OPERATOR: self.controller, L_JOB: name, L_TYPE: "launcher", L_ROLE: "master"}
        spec = template["spec"]
        if not spec.get("serviceAccountName"):
            spec["serviceAccountName"] = f"{name}-launcher"
        limits = {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "5Gi"}
        spec.setdefault("initContainers", []).append(
            {
                "name": "kubectl-delivery",
                "image": self.kubectl_delivery_image,
                "imagePullPolicy": "IfNotPresent",
                "env": [
                    {"name": "TARGET_DIR", "value": "/opt/kube"},
                    {"name": "NAMESPACE", "value": job["metadata"]["namespace"]},
                ],
                "volumeMounts": [
                    {"name": "mpi-job-kubectl", "mountPath": "/opt/kube"},
                    {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
                ],
                "resources": {"limits": dict(limits), "requests": dict(limits)},
            }
        )
        container = spec["containers"][0]
        env = container.setdefault("env", [])
        env += [
            {"name": "OMPI_MCA_plm_rsh_agent", "value": "/etc/mpi/kubexec.sh"},
            {"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"},
        ]
        if not self._gpu_launcher(job):
            env += [
                {"name": "NVIDIA_VISIBLE_DEVICES", "value": ""},
                {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": ""},
            ]
        names = {e["name"] for e in env}
        if "I_MPI_HYDRA_BOOTSTRAP" not in names:
            env.append({"name": "I_MPI_HYDRA_BOOTSTRAP", "value": "rsh"})
        if "I_MPI_HYDRA_BOOTSTRAP_EXEC" not in names:
            env.append({"name": "I_MPI_HYDRA_BOOTSTRAP_EXEC", "value": "/etc/mpi/kubexec.sh"})
        container.setdefault("volumeMounts", []).extend(
            [{"name": "mpi-job-kubectl", "mountPath": "/opt/kube"}, {"name": "mpi-job-config", "mountPath": "/etc/mpi"}]
        )
        policy = replica.get("restartPolicy")
        spec["restartPolicy"] = "Never" if policy == "ExitCode" else policy
        spec.setdefault("volumes", []).extend(
            [
                {"name": "mpi-job-kubectl", "emptyDir": {}},
                {
                    "name": "mpi-job-config",
                    "configMap": {
                        "name": f"{name}-config",
                        "items": [
                            {"key": "kubexec.sh", "path": "kubexec.sh", "mode": 0o555},
                            {"key": "hostfile", "path": "hostfile", "mode": 0o444},
                            {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 0o555},
                        ],
                    },
                },
            ]
        )
        meta = template.get("metadata") or {}
        return {
            "metadata": {
                "name": f"{name}-launcher",
                "labels": {**(meta.get("labels") or {}), **labels},
                **({"annotations": meta["annotations"]} if meta.get("annotations") else {}),
                "ownerReferences": self._owner(job),
            },
            "spec": spec,
        }


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
            _env(container, "MX_CONFIG", json.dumps(config, separators=(",", ":")))
            _env(container, "DMLC_PS_ROOT_PORT", str(scheduler["port"]))
            _env(container, "DMLC_PS_ROOT_URI", scheduler["url"])
            _env(container, "DMLC_NUM_SERVER", str(len(cluster.get("server") or [])))
            _env(container, "DMLC_NUM_WORKER", str(len(cluster.get("worker") or [])))
            _env(container, "DMLC_ROLE", rt)
            _env(container, "DMLC_USE_KUBERNETES", "1")
            if rt == "worker":
                _env(container, "DMLC_WORKER_ID", str(index))

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


FRAMEWORKS: dict[str, Framework] = {f.plural: f for f in (PyTorch(), TensorFlow(), MPI(), MXNet())}


class TrainingOperator(ControllerLoop):
    """Reconciles every kubeflow.org/v1 job of the frameworks it runs, on each change."""

    name = "training-operator"

    def __init__(self, api: ApiServer, frameworks: tuple[str, ...] = ("pytorchjobs", "tfjobs", "mpijobs", "mxjobs")):
        super().__init__(api)
        self.frameworks = [FRAMEWORKS[p] for p in frameworks]
        self._exits: set[tuple[str, int]] = set()

    def reconcile_all(self) -> None:
        for framework in self.frameworks:
            if ("kubeflow.org", "v1", framework.plural) not in self.api.resources:
                continue  # that CRD is not installed: the operator does not watch the kind
            resource = self.api.resource("kubeflow.org", "v1", framework.plural)
            for job in self.api.list(resource)["items"]:
                try:
                    self.reconcile(framework, resource, job)
                except ApiError as error:
                    if error.code not in (404, 409):
                        raise

    # ---- one job -------------------------------------------------------------------------------

    def _owned(self, plural: str, job: dict[str, Any], framework: Framework) -> list[dict[str, Any]]:
        resource = self.api.resource("", "v1", plural)
        selector = f"{L_JOB}={job['metadata']['name']},{L_OPERATOR}={framework.controller}"
        items = self.api.list(resource, job["metadata"]["namespace"], selector)["items"]
        uid = job["metadata"]["uid"]
        return [
            o
            for o in items
            if any(r.get("uid") == uid and r.get("controller") for r in o["metadata"].get("ownerReferences") or [])
        ]

    def reconcile(self, framework: Framework, resource: Any, job: dict[str, Any]) -> None:
        if job["metadata"].get("deletionTimestamp"):
            return
        managed_by = (job["spec"].get("runPolicy") or {}).get("managedBy")
        if managed_by not in (None, "", OPERATOR):  # ManagedByExternalController
            return
        job = copy.deepcopy(job)
        framework.defaults(job)
        name = job["metadata"]["name"]
        status = copy.deepcopy(job.get("status") or {})
        if not status.get("conditions"):
            # onOwnerCreateFunc: the Created condition
            set_condition(status, "Created", "True", f"{framework.kind}Created", f"{framework.kind} {name} is created.")
        status.setdefault("replicaStatuses", {})
        before = copy.deepcopy(job.get("status") or {})
        specs = job["spec"][framework.specs_field]
        run_policy = job["spec"]["runPolicy"]
        pods = self._owned("pods", job, framework)
        services = self._owned("services", job, framework)
        finished = is_true(status, "Succeeded") or is_true(status, "Failed")
        if finished:
            self._clean_up(job, run_policy, status, pods)
            if is_true(status, "Succeeded"):
                for counts in status["replicaStatuses"].values():
                    counts["succeeded"] = counts.get("succeeded", 0) + counts.get("active", 0)
                    counts["active"] = 0
            self._write(resource, job, status, before)
            return
        status.setdefault("startTime", now())
        active = [
            p
            for p in pods
            if p["status"].get("phase") not in ("Succeeded", "Failed") and not p["metadata"].get("deletionTimestamp")
        ]
        failed = sum(1 for p in pods if p["status"].get("phase") == "Failed")
        total = sum(int(s.get("replicas", 1)) for s in specs.values())
        previous_failed = sum(c.get("failed", 0) for c in status["replicaStatuses"].values())
        limit = run_policy.get("backoffLimit")
        exceeded = False
        if limit is not None:
            # job.go: a new failure with the job not fully active and previousRetry+1 > limit (the
            # work queue's requeues, 0 on a healthy reconcile), or PastBackoffLimit
            exceeded = (failed > previous_failed and len(active) != total and int(limit) < 1) or self._past_backoff(
                specs, pods, int(limit)
            )
        message = ""
        if exceeded:
            message = f"Job {name} has failed because it has reached the specified backoff limit"
        elif (
            run_policy.get("activeDeadlineSeconds") is not None
            and status.get("startTime")
            and (time.time() - _seconds(status["startTime"]) >= int(run_policy["activeDeadlineSeconds"]))
        ):
            message = f"Job {name} has failed because it was active longer than specified deadline"
        if message:
            status.setdefault("completionTime", now())
            self._delete_pods_and_services(job, run_policy, status, pods)
            record(self.api, job, f"{framework.kind}Failed", message, "Normal", framework.controller)
            set_condition(status, "Failed", "True", f"{framework.kind}Failed", message)
            self._write(resource, job, status, before)
            return
        framework.reconcile_replicas(self, job, status, pods, services, specs)
        framework.update_status(job, specs, status, self.api)
        self._write(resource, job, status, before)

    def _past_backoff(self, specs: dict[str, Any], pods: list[dict[str, Any]], limit: int) -> bool:
        """pkg/core/job.go PastBackoffLimit."""
        restarts = 0
        for rtype, spec in specs.items():
            if spec.get("restartPolicy") not in ("OnFailure", "Always", "ExitCode"):
                continue
            for pod in pods:
                if pod["metadata"].get("labels", {}).get(L_TYPE) != rtype.lower():
                    continue
                if pod["status"].get("phase") != "Running":
                    continue
                for field in ("initContainerStatuses", "containerStatuses"):
                    restarts += sum(int(s.get("restartCount", 0)) for s in pod["status"].get(field) or [])
        return restarts > 0 if limit == 0 else restarts >= limit

    def _reconcile_pods(
        self, framework: Framework, job: dict, status: dict, pods: list, rtype: str, spec: dict, specs: dict
    ) -> None:
        rt = rtype.lower()
        status["replicaStatuses"][rtype] = {}  # initializeReplicaStatuses
        counts = status["replicaStatuses"][rtype]
        mine = [p for p in pods if p["metadata"].get("labels", {}).get(L_TYPE) == rt]
        replicas = int(spec.get("replicas", 1))
        by_index: dict[int, list[dict]] = {}
        for pod in mine:
            try:
                by_index.setdefault(int(pod["metadata"]["labels"].get(L_INDEX, "")), []).append(pod)
            except ValueError:
                continue
        pods_resource = self.api.resource("", "v1", "pods")
        namespace = job["metadata"]["namespace"]
        for index in range(max([replicas, *[i + 1 for i in by_index]])):
            slice_ = by_index.get(index, [])
            if not slice_:
                if index < replicas:
                    self._create_pod(framework, job, rt, index, spec, specs)
                continue
            if len(slice_) > 1:
                continue
            pod = slice_[0]
            if index >= replicas:
                self._delete(pods_resource, namespace, pod["metadata"]["name"])
                continue
            exit_code = 0xBEEF
            for container in pod["status"].get("containerStatuses") or []:
                terminated = (container.get("state") or {}).get("terminated")
                if container.get("name") == framework.container and terminated:
                    exit_code = int(terminated.get("exitCode", 0))
                    if (pod["metadata"]["uid"], exit_code) in self._exits:
                        continue
                    self._exits.add((pod["metadata"]["uid"], exit_code))
                    record(
                        self.api,
                        job,
                        "ExitedWithCode",
                        f"Pod: {namespace}.{pod['metadata']['name']} exited with code {exit_code}",
                        "Normal",
                        framework.controller,
                    )
            policy = spec.get("restartPolicy")
            if pod["status"].get("phase") == "Failed":
                if policy in ("OnFailure", "Always") or (policy == "ExitCode" and exit_code >= 128):
                    self._delete(pods_resource, namespace, pod["metadata"]["name"])
                    message = f"job {job['metadata']['name']} is restarting because {rtype} replica(s) failed."
                    record(self.api, job, f"{framework.kind}Restarting", message, "Warning", framework.controller)
                    set_condition(status, "Restarting", "True", f"{framework.kind}Restarting", message)
                elif policy == "ExitCode":
                    message = f'job "{job["metadata"]["name"]}" is failing because "{rtype}" replica(s) failed.'
                    set_condition(status, "Failed", "True", f"{framework.kind}Failed", message)
            phase = pod["status"].get("phase")
            if phase == "Running":
                key = "failed" if pod["metadata"].get("deletionTimestamp") else "active"
                counts[key] = counts.get(key, 0) + 1
            elif phase == "Succeeded":
                counts["succeeded"] = counts.get("succeeded", 0) + 1
            elif phase == "Failed":
                counts["failed"] = counts.get("failed", 0) + 1

    def _labels(self, framework: Framework, job: dict, rt: str, index: int) -> dict[str, str]:
        return {
            L_OPERATOR: framework.controller,
            L_JOB: job["metadata"]["name"].replace("/", "-"),
            L_TYPE: rt,
            L_INDEX: str(index),
        }

    def _owner(self, framework: Framework, job: dict) -> dict[str, Any]:
        return {
            "apiVersion": "kubeflow.org/v1",
            "kind": framework.kind,
            "name": job["metadata"]["name"],
            "uid": job["metadata"]["uid"],
            "blockOwnerDeletion": True,
            "controller": True,
        }

    def _create_pod(self, framework: Framework, job: dict, rt: str, index: int, spec: dict, specs: dict) -> None:
        labels = self._labels(framework, job, rt, index)
        if framework.is_master_role(specs, next(k for k in specs if k.lower() == rt), index):
            labels[L_ROLE] = "master"
        template = copy.deepcopy(spec["template"])
        meta = template.setdefault("metadata", {})
        meta["name"] = f"{job['metadata']['name']}-{rt}-{index}"
        meta.setdefault("labels", {}).update(labels)
        try:
            framework.set_cluster_spec(job, template, rt, index)
        except ValueError as error:
            record(self.api, job, "FailedCreatePod", f"Error creating: {error}", "Warning", framework.controller)
            return
        if template["spec"].get("restartPolicy"):
            record(
                self.api,
                job,
                "SettedPodTemplateRestartPolicy",
                "Restart policy in pod template will be overwritten by restart policy in replica spec",
                "Warning",
                framework.controller,
            )
        policy = spec.get("restartPolicy")
        template["spec"]["restartPolicy"] = "Never" if policy == "ExitCode" else policy
        pod = {
            "metadata": {
                **meta,
                "namespace": job["metadata"]["namespace"],
                "ownerReferences": [self._owner(framework, job)],
            },
            "spec": template["spec"],
        }
        self._create("pods", job, pod, framework)

    def _reconcile_services(self, framework: Framework, job: dict, services: list, rtype: str, spec: dict) -> None:
        rt = rtype.lower()
        have = {s["metadata"]["labels"].get(L_INDEX) for s in services if s["metadata"]["labels"].get(L_TYPE) == rt}
        ports = []
        for container in spec["template"]["spec"].get("containers") or []:
            if container.get("name") == framework.container:
                ports = [
                    {"name": p["name"], "port": p["containerPort"]}
                    for p in container.get("ports") or []
                    if p.get("name") == framework.port_name
                ]
        for index in range(int(spec.get("replicas", 1))):
            if str(index) in have:
                continue
            labels = self._labels(framework, job, rt, index)
            service = {
                "metadata": {
                    "name": f"{job['metadata']['name']}-{rt}-{index}",
                    "labels": labels,
                    "ownerReferences": [self._owner(framework, job)],
                },
                "spec": {"clusterIP": "None", "selector": labels, "ports": ports},
            }
            self._create("services", job, service, framework)

    def _create(self, plural: str, job: dict, obj: dict, framework: Framework) -> None:
        """PodControl/ServiceControl.Create...WithControllerRef: an event either way."""
        kind = "Pod" if plural == "pods" else "Service"
        try:
            self.api.create(self.api.resource("", "v1", plural), obj, job["metadata"]["namespace"])
        except ApiError as error:
            if error.code == 409:
                return
            record(
                self.api,
                job,
                f"FailedCreate{kind}",
                f"Error creating: {error.status.get('message')}",
                "Warning",
                framework.controller,
            )
            return
        record(
            self.api,
            job,
            f"SuccessfulCreate{kind}",
            f"Created {kind.lower()}: {obj['metadata']['name']}",
            "Normal",
            framework.controller,
        )

    def _ensure(self, plural: str, job: dict, obj: dict, framework: Framework, group: str = "") -> dict | None:
        """Get it, or create it (the MPI controller's getOrCreate...)."""
        resource = self.api.resource(group, "v1", plural)
        found = self.api.try_get(resource, job["metadata"]["namespace"], obj["metadata"]["name"])
        if found is not None:
            return found
        try:
            return self.api.create(resource, obj, job["metadata"]["namespace"])
        except ApiError as error:
            record(
                self.api,
                job,
                "FailedCreate",
                f"Error creating: {error.status.get('message')}",
                "Warning",
                framework.controller,
            )
            return None

    def _delete(self, resource: Any, namespace: str, name: str) -> None:
        try:
            self.api.delete(resource, namespace, name)
        except ApiError as error:
            if error.code != 404:
                raise

    def _delete_pods_and_services(self, job: dict, run_policy: dict, status: dict, pods: list) -> None:
        """common/job.go DeletePodsAndServices."""
        finished = is_true(status, "Succeeded") or is_true(status, "Failed")
        policy = run_policy.get("cleanPodPolicy")
        if finished and policy == "None":
            return
        namespace = job["metadata"]["namespace"]
        for pod in pods:
            if finished and policy == "Running" and pod["status"].get("phase") not in ("Running", "Pending"):
                continue
            self._delete(self.api.resource("", "v1", "pods"), namespace, pod["metadata"]["name"])
            self._delete(self.api.resource("", "v1", "services"), namespace, pod["metadata"]["name"])

    def _clean_up(self, job: dict, run_policy: dict, status: dict, pods: list) -> None:
        self._delete_pods_and_services(job, run_policy, status, pods)
        ttl = run_policy.get("ttlSecondsAfterFinished")
        completed = status.get("completionTime")
        if ttl is not None and completed and time.time() >= _seconds(completed) + int(ttl):
            resource = self.api.by_kind(job["apiVersion"], job["kind"])
            self._delete(resource, job["metadata"]["namespace"], job["metadata"]["name"])

    def _write(self, resource: Any, job: dict, status: dict, before: dict) -> None:
        if status == before:
            return
        self.api.update(
            resource,
            {
                "metadata": {"name": job["metadata"]["name"], "resourceVersion": job["metadata"]["resourceVersion"]},
                "status": status,
            },
            job["metadata"]["namespace"],
            "status",
        )


def _seconds(stamp: str) -> float:
    return time.mktime(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone


__all__ = ["FRAMEWORKS", "TrainingOperator", "rfc3339"]
