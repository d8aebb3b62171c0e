"""MPIJob kubeflow.org/v1 in the simulated training-operator (not mpi-operator's v2beta1, which
is `mpi_operator.py`): the launcher and workers, the hostfile ConfigMap, kubexec and RBAC."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .apiserver import ApiServer, now
from .clone import clone
from .training_job import L_INDEX, L_JOB, L_OPERATOR, L_ROLE, L_TYPE, Framework, set_condition

if TYPE_CHECKING:
    from .training_operator import TrainingOperator


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
        template = clone(job["spec"][self.specs_field]["Worker"]["template"])
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
        template = clone(replica["template"])
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
