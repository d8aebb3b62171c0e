"""mpi-operator's MPIJob controller (kubeflow.org/v2beta1), written from kubeflow/mpi-operator
v0.6.0 pkg/controller/mpi_job_controller.go (syncHandler and what it calls),
mpi_job_controller_status.go, pkg/apis/kubeflow/v2beta1/{default.go,constants.go,types.go} and
pkg/apis/kubeflow/validation/validation.go. Served by `Cluster(mpi_operator=True)`, which installs
mpi-operator's MPIJob CRD instead of the training operator's.

- defaults (SetDefaults_MPIJob, in memory): cleanPodPolicy None, slotsPerWorker 1,
  sshAuthMountPath /root/.ssh, mpiImplementation OpenMPI, launcherCreationPolicy AtStartup; the
  Launcher 1 replica, restartPolicy OnFailure; the Worker 0 replicas, restartPolicy Never;
- validation (ValidateMPIJob): `<job>-worker-<n-1>` a DNS-1035 label, a Launcher spec with 1
  replica, replicas > 0 for the Worker, restartPolicy Never or OnFailure, a container, cleanPodPolicy
  None/Running/All, mpiImplementation OpenMPI/Intel/MPICH; an invalid job gets a `ValidationError`
  Warning event and nothing else (here once per version of the job: upstream records one per
  sync, which the event recorder aggregates);
- `runPolicy.managedBy` other than `kubeflow.org/mpi-operator` (or unset): left alone;
- the headless Service `<job>` selecting `training.kubeflow.org/{operator-name: mpi-operator,
  job-name}` (launcher and workers); the ConfigMap `<job>-config` with `hostfile`
  (`<job>-worker-<i>.<job>.<ns>.svc slots=<slotsPerWorker>`, the launcher first with
  runLauncherAsWorker; Intel/MPICH `<host>:<slots>`) and `discover_hosts.sh` (`echo` per Running
  worker); the Secret `<job>-ssh` (`kubernetes.io/ssh-auth`, an ECDSA P-521 pair); each labelled
  `app: <job>` and controlled by the MPIJob;
- worker pods `<job>-worker-<i>`: the template's labels plus `training.kubeflow.org/{operator-name,
  job-name, job-role: worker, replica-index}` (no replica-type label at this tag), hostname and
  subdomain `<job>`, the DNS search `<job>.<ns>.svc.cluster.local`, `/usr/sbin/sshd -De` when the
  first container has neither command nor args, `K_MPI_JOB_ROLE=worker`, the SSH Secret at
  sshAuthMountPath (mode 0600 at /root/.ssh); scaled-down indices deleted;
- the launcher, a batch/v1 Job `<job>-launcher` (ttlSecondsAfterFinished, activeDeadlineSeconds,
  backoffLimit from runPolicy): its pod template labelled job-role `launcher`, hostname
  `<job>-launcher`, subdomain `<job>`, `K_MPI_JOB_ROLE=launcher`, for OpenMPI
  `OMPI_MCA_orte_keep_fqdn_hostnames=true`, `OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile`,
  `OMPI_MCA_plm_rsh_args=-o ConnectionAttempts=10`, `OMPI_MCA_orte_set_default_slots`; empty
  NVIDIA_VISIBLE_DEVICES / NVIDIA_DRIVER_CAPABILITIES unless runLauncherAsWorker; the SSH Secret;
  the ConfigMap at /etc/mpi (hostfile 0444, discover_hosts.sh 0555); created at once
  (launcherCreationPolicy AtStartup) or once every worker is Ready (WaitForWorkersReady);
- status (updateMPIJobStatus, updateMPIJobFailedStatus, setCondition): `Created`
  (`MPIJobCreated`); `Running` (`MPIJob <ns>/<name> is running.`) while a launcher pod and every
  worker run; `Succeeded` with the launcher Job's Complete (completionTime the Job's); `Failed`
  with its Failed condition's reason and message (`BackoffLimitExceeded/<pod reason>` and
  `...: <pod message>` from the last failed launcher pod), or `MPIJobEvicted` when workers were
  evicted; Succeeded/Failed set Running (and an earlier Failed) False; replicaStatuses counts;
- finished (completionTime set): cleanPodPolicy Running deletes the Running and Pending workers,
  All every worker; None keeps them.
Not modelled: suspend, gang scheduling (PodGroups), the Restarting condition (v2beta1 never sets it).
"""

from __future__ import annotations

import re
from typing import Any

from .apiserver import ApiServer, now
from .clone import clone
from .controller import ControllerLoop
from .errors import ApiError
from .events import record
from .ssh_keys import ssh_auth_secret

GROUP = "kubeflow.org"
VERSION = "v2beta1"
COMPONENT = "mpi-job-controller"
MANAGER = "kubeflow.org/mpi-operator"
L_OPERATOR = "training.kubeflow.org/operator-name"
L_JOB = "training.kubeflow.org/job-name"
L_ROLE = "training.kubeflow.org/job-role"
L_INDEX = "training.kubeflow.org/replica-index"
CONFIG_MOUNT = "/etc/mpi"
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")

OMPI_ENV = [
    {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
    {"name": "OMPI_MCA_orte_default_hostfile", "value": f"{CONFIG_MOUNT}/hostfile"},
    {"name": "OMPI_MCA_plm_rsh_args", "value": "-o ConnectionAttempts=10"},
]
INTEL_ENV = [
    {"name": "I_MPI_HYDRA_HOST_FILE", "value": f"{CONFIG_MOUNT}/hostfile"},
    {"name": "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "value": "-o ConnectionAttempts=10"},
]
MPICH_ENV = [
    {"name": "HYDRA_HOST_FILE", "value": f"{CONFIG_MOUNT}/hostfile"},
    {"name": "HYDRA_LAUNCH_EXTRA_ARGS", "value": "-o ConnectionAttempts=10"},
]


def defaults(job: dict[str, Any]) -> dict[str, Any]:
    """default.go SetDefaults_MPIJob, on a copy (the controller never writes them back)."""
    job = clone(job)
    spec = job.setdefault("spec", {})
    spec.setdefault("runPolicy", {}).setdefault("cleanPodPolicy", "None")
    spec.setdefault("slotsPerWorker", 1)
    spec.setdefault("sshAuthMountPath", "/root/.ssh")
    spec.setdefault("mpiImplementation", "OpenMPI")
    spec.setdefault("launcherCreationPolicy", "AtStartup")
    specs = spec.get("mpiReplicaSpecs") or {}
    for rtype, policy, replicas in (("Launcher", "OnFailure", 1), ("Worker", "Never", 0)):
        if specs.get(rtype) is not None:
            specs[rtype].setdefault("restartPolicy", policy)
            specs[rtype].setdefault("replicas", replicas)
    return job


def validate(job: dict[str, Any]) -> list[str]:
    """validation.go ValidateMPIJob: the field errors, as `path: message`."""
    errors = []
    spec = job["spec"]
    specs = spec.get("mpiReplicaSpecs")
    worker = (specs or {}).get("Worker")
    replicas = int(worker.get("replicas") or 0) if worker else 0
    hostname = f"{job['metadata']['name']}-worker-{max(replicas, 1) - 1}"
    if len(hostname) > 63 or not DNS_1035.match(hostname):
        errors.append(
            f'metadata.name: Invalid value: "{job["metadata"]["name"]}": will not able to create pod and service '
            f'with invalid DNS label "{hostname}"'
        )
    if specs is None:
        errors.append("spec.mpiReplicaSpecs: Required value: must have replica specs")
    else:
        for rtype in ("Launcher", "Worker"):
            path = f"spec.mpiReplicaSpecs[{rtype}]"
            replica = specs.get(rtype)
            if replica is None:
                if rtype == "Launcher":
                    errors.append(f"{path}: Required value: must have Launcher replica spec")
                continue
            if replica.get("restartPolicy") not in ("Never", "OnFailure"):
                errors.append(
                    f'{path}.restartPolicy: Unsupported value: "{replica.get("restartPolicy")}": supported values: '
                    '"Never", "OnFailure"'
                )
            if not ((replica.get("template") or {}).get("spec") or {}).get("containers"):
                errors.append(f"{path}.template.spec.containers: Required value: must define at least one container")
            if rtype == "Launcher" and int(replica["replicas"]) != 1:
                errors.append(f"{path}.replicas: Invalid value: {replica['replicas']}: must be 1")
            if rtype == "Worker" and int(replica["replicas"]) <= 0:
                errors.append(
                    f"{path}.replicas: Invalid value: {replica['replicas']}: must be greater than or equal to 1"
                )
    policy = spec["runPolicy"]["cleanPodPolicy"]
    if policy not in ("None", "Running", "All"):
        errors.append(f'spec.runPolicy.cleanPodPolicy: Unsupported value: "{policy}": supported values: ...')
    if spec["mpiImplementation"] not in ("OpenMPI", "Intel", "MPICH"):
        errors.append(f'spec.mpiImplementation: Unsupported value: "{spec["mpiImplementation"]}"')
    return errors


def set_condition(status: dict[str, Any], kind: str, value: str, reason: str, message: str) -> bool:
    """mpi_job_controller_status.go setCondition + filterOutCondition; True when it changed."""
    conditions = status.get("conditions") or []
    current = next((c for c in conditions if c["type"] == kind), None)
    if current and current["status"] == value and current.get("reason") == reason:
        return False
    stamp = now()
    condition = {"type": kind, "status": value, "reason": reason, "message": message,
                 "lastUpdateTime": stamp, "lastTransitionTime": stamp}  # fmt: skip
    if current and current["status"] == value:
        condition["lastTransitionTime"] = current["lastTransitionTime"]
    kept = []
    for c in conditions:
        if (kind, c["type"]) in (("Restarting", "Running"), ("Running", "Restarting")) or c["type"] == kind:
            continue
        if kind in ("Failed", "Succeeded") and c["type"] in ("Running", "Failed"):
            c = {**c, "status": "False"}
        kept.append(c)
    status["conditions"] = kept + [condition]
    return True


def has_condition(obj_status: dict[str, Any], kind: str) -> bool:
    return any(c["type"] == kind and c["status"] == "True" for c in obj_status.get("conditions") or [])


def controlled_by(obj: dict[str, Any], uid: str) -> bool:
    return any(r.get("uid") == uid and r.get("controller") for r in obj["metadata"].get("ownerReferences") or [])


def owner(job: dict[str, Any]) -> list[dict[str, Any]]:
    """metav1.NewControllerRef(mpiJob, kubeflow.SchemeGroupVersionKind)."""
    meta = job["metadata"]
    return [{"apiVersion": f"{GROUP}/{VERSION}", "kind": "MPIJob", "name": meta["name"], "uid": meta["uid"],
             "controller": True, "blockOwnerDeletion": True}]  # fmt: skip


def default_labels(name: str, role: str) -> dict[str, str]:
    return {L_OPERATOR: "mpi-operator", L_JOB: name, L_ROLE: role}


def hostfile(job: dict[str, Any]) -> str:
    """newConfigMap: the launcher (runLauncherAsWorker) and every worker, by their DNS names."""
    name, namespace, spec = job["metadata"]["name"], job["metadata"]["namespace"], job["spec"]
    slots = int(spec["slotsPerWorker"])
    worker = (spec.get("mpiReplicaSpecs") or {}).get("Worker")
    hosts = [f"{name}-launcher"] if spec.get("runLauncherAsWorker") else []
    hosts += [f"{name}-worker-{i}" for i in range(int(worker["replicas"]) if worker else 0)]
    if spec["mpiImplementation"] == "OpenMPI":
        return "".join(f"{h}.{name}.{namespace}.svc slots={slots}\n" for h in hosts)
    return "".join(f"{h}.{name}.{namespace}.svc:{slots}\n" for h in hosts)


def discover_hosts(job: dict[str, Any], running: list[dict[str, Any]]) -> str:
    """updateDiscoverHostsInConfigMap: the Running workers, sorted by name."""
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    text = "#!/bin/sh\n"
    if job["spec"].get("runLauncherAsWorker"):
        text += f"echo {name}-launcher.{name}.{namespace}.svc\n"
    for pod in sorted(running, key=lambda p: p["metadata"]["name"]):
        text += f"echo {pod['metadata']['name']}.{name}.{pod['metadata']['namespace']}.svc\n"
    return text


def config_map(job: dict[str, Any], running: list[dict[str, Any]]) -> dict[str, Any]:
    name = job["metadata"]["name"]
    return {
        "metadata": {"name": f"{name}-config", "labels": {"app": name}, "ownerReferences": owner(job)},
        "data": {"hostfile": hostfile(job), "discover_hosts.sh": discover_hosts(job, running)},
    }


def service(job: dict[str, Any]) -> dict[str, Any]:
    """newJobService: headless, named like the job, selecting the launcher and the workers."""
    name = job["metadata"]["name"]
    return {
        "metadata": {"name": name, "labels": {"app": name}, "ownerReferences": owner(job)},
        "spec": {"clusterIP": "None", "selector": {L_OPERATOR: "mpi-operator", L_JOB: name}},
    }


def _restart_policy(spec: dict[str, Any], replica: dict[str, Any]) -> None:
    """setRestartPolicy: ExitCode becomes Never."""
    policy = replica.get("restartPolicy")
    spec["restartPolicy"] = "Never" if policy == "ExitCode" else policy


def _setup_ssh(spec: dict[str, Any], job: dict[str, Any]) -> None:
    """setupSSHOnPod: the SSH Secret on the first container at sshAuthMountPath."""
    mount_path = job["spec"]["sshAuthMountPath"]
    secret: dict[str, Any] = {
        "secretName": f"{job['metadata']['name']}-ssh",
        "items": [
            {"key": "ssh-privatekey", "path": "id_rsa"},
            {"key": "ssh-publickey", "path": "id_rsa.pub"},
            {"key": "ssh-publickey", "path": "authorized_keys"},
        ],
    }
    if mount_path == "/root/.ssh":
        secret["defaultMode"] = 0o600
    spec.setdefault("volumes", []).append({"name": "ssh-auth", "secret": secret})
    spec["containers"][0].setdefault("volumeMounts", []).append({"name": "ssh-auth", "mountPath": mount_path})


def worker_pod(job: dict[str, Any], index: int) -> dict[str, Any]:
    """newWorker."""
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    replica = job["spec"]["mpiReplicaSpecs"]["Worker"]
    template = clone(replica.get("template") or {})
    meta, spec = template.get("metadata") or {}, template["spec"]
    labels = {**(meta.get("labels") or {}), **default_labels(name, "worker"), L_INDEX: str(index)}
    pod_name = f"{name}-worker-{index}"
    spec["hostname"], spec["subdomain"] = pod_name, name
    if spec.get("hostNetwork"):
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    dns = spec.setdefault("dnsConfig", {})
    dns["searches"] = [*(dns.get("searches") or []), f"{name}.{namespace}.svc.cluster.local"]
    _restart_policy(spec, replica)
    container = spec["containers"][0]
    if not container.get("command") and not container.get("args"):
        container["command"] = ["/usr/sbin/sshd", "-De"]
    container.setdefault("env", []).append({"name": "K_MPI_JOB_ROLE", "value": "worker"})
    _setup_ssh(spec, job)
    pod_meta: dict[str, Any] = {"name": pod_name, "labels": labels, "ownerReferences": owner(job)}
    if meta.get("annotations"):
        pod_meta["annotations"] = meta["annotations"]
    return {"metadata": pod_meta, "spec": spec}


def launcher_job(job: dict[str, Any]) -> dict[str, Any]:
    """newLauncherJob and newLauncherPodTemplate."""
    name, spec = job["metadata"]["name"], job["spec"]
    replica = spec["mpiReplicaSpecs"]["Launcher"]
    template = clone(replica.get("template") or {})
    meta, pod = template.get("metadata") or {}, template["spec"]
    labels = {**(meta.get("labels") or {}), **default_labels(name, "launcher")}
    pod["hostname"], pod["subdomain"] = f"{name}-launcher", name
    if pod.get("hostNetwork"):
        pod["dnsPolicy"] = "ClusterFirstWithHostNet"
    container = pod["containers"][0]
    env = container.setdefault("env", [])
    env.append({"name": "K_MPI_JOB_ROLE", "value": "launcher"})
    slots = str(spec["slotsPerWorker"])
    implementation = spec["mpiImplementation"]
    if implementation == "OpenMPI":
        env += clone(OMPI_ENV) + [{"name": "OMPI_MCA_orte_set_default_slots", "value": slots}]
    elif implementation == "Intel":
        env += clone(INTEL_ENV) + [{"name": "I_MPI_PERHOST", "value": slots}]
    else:
        env += clone(MPICH_ENV)
    if not spec.get("runLauncherAsWorker"):
        env += [{"name": "NVIDIA_VISIBLE_DEVICES"}, {"name": "NVIDIA_DRIVER_CAPABILITIES"}]
    _setup_ssh(pod, job)
    _restart_policy(pod, replica)
    pod.setdefault("volumes", []).append({
        "name": "mpi-job-config",
        "configMap": {"name": f"{name}-config", "items": [
            {"key": "hostfile", "path": "hostfile", "mode": 0o444},
            {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 0o555}]},
    })  # fmt: skip
    container.setdefault("volumeMounts", []).append({"name": "mpi-job-config", "mountPath": CONFIG_MOUNT})
    template_meta: dict[str, Any] = {"labels": labels, "ownerReferences": owner(job)}
    if meta.get("annotations"):
        template_meta["annotations"] = meta["annotations"]
    run_policy = spec["runPolicy"]
    job_spec: dict[str, Any] = {"template": {"metadata": template_meta, "spec": pod}}
    for field in ("ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit"):
        if run_policy.get(field) is not None:
            job_spec[field] = run_policy[field]
    return {
        "metadata": {"name": f"{name}-launcher", "labels": {"app": name}, "ownerReferences": owner(job)},
        "spec": job_spec,
    }


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def _phase(pod: dict[str, Any]) -> str | None:
    return (pod.get("status") or {}).get("phase")


class MPIOperator(ControllerLoop):
    """Reconciles every kubeflow.org/v2beta1 MPIJob on each change."""

    name = "mpi-operator"

    def __init__(self, api: ApiServer):
        super().__init__(api)
        self._reported: set[tuple[str, str]] = set()  # (uid, resourceVersion) already given an event

    def reconcile_all(self) -> None:
        resource = self.api.resource(GROUP, VERSION, "mpijobs")
        for job in self.api.list(resource)["items"]:
            try:
                self.reconcile(resource, job)
            except ApiError as error:
                if error.code not in (404, 409):
                    raise

    def _event(self, job: dict[str, Any], reason: str, message: str, kind: str = "Normal") -> None:
        record(self.api, job, reason, message, kind, COMPONENT)

    def _exists(self, job: dict[str, Any], name: str, kind: str) -> None:
        """MessageResourceExists: a same-named object another owner controls."""
        message = f'Resource "{name}" of Kind "{kind}" already exists and is not managed by MPIJob'
        self._event(job, "ErrResourceExists", message, "Warning")

    def _get_or_create(self, plural: str, job: dict[str, Any], obj: dict[str, Any]) -> dict | None:
        """getOrCreate...: None (and a Warning) when a same-named object belongs to someone else."""
        resource = self.api.resource("", "v1", plural)
        namespace = job["metadata"]["namespace"]
        found = self.api.try_get(resource, namespace, obj["metadata"]["name"])
        if found is None:
            return self.api.create(resource, obj, namespace)
        if not controlled_by(found, job["metadata"]["uid"]):
            kind = {"services": "Service", "configmaps": "ConfigMap", "secrets": "Secret"}.get(plural, plural)
            self._exists(job, found["metadata"]["name"], kind)
            return None
        return found

    def reconcile(self, resource: Any, stored: dict[str, Any]) -> None:
        job = defaults(stored)
        meta, spec = job["metadata"], job["spec"]
        if spec["runPolicy"].get("managedBy") not in (None, MANAGER) or meta.get("deletionTimestamp"):
            return
        name, namespace = meta["name"], meta["namespace"]
        errors = validate(job)
        if errors:
            key = (meta["uid"], meta["resourceVersion"])
            if key not in self._reported:
                self._reported.add(key)
                self._event(job, "ValidationError", f"Found validation errors: [{', '.join(errors)}]", "Warning")
            return
        status = clone(stored.get("status") or {})
        before = clone(status)
        if not status.get("conditions"):
            message = f"MPIJob {namespace}/{name} is created."
            set_condition(status, "Created", "True", "MPIJobCreated", message)
            self._event(job, "MPIJobCreated", message)
        pods = self.api.resource("", "v1", "pods")
        if (has_condition(status, "Succeeded") or has_condition(status, "Failed")) and status.get("completionTime"):
            if spec["runPolicy"]["cleanPodPolicy"] in ("All", "Running"):
                self._delete_workers(job)
                status.setdefault("replicaStatuses", {})["Worker"] = {}
            self._write(resource, stored, status, before)
            return
        status.setdefault("startTime", now())
        jobs = self.api.resource("batch", "v1", "jobs")
        launcher = self.api.try_get(jobs, namespace, f"{name}-launcher")
        if launcher is not None and not controlled_by(launcher, meta["uid"]):
            self._exists(job, f"{name}-launcher", "Job")
            return
        workers: list[dict[str, Any]] = []
        done = launcher is not None and (
            has_condition(launcher.get("status") or {}, "Complete")
            or has_condition(launcher.get("status") or {}, "Failed")
        )
        if not done:
            if self._get_or_create("services", job, service(job)) is None:
                return
            running = [
                p
                for p in self.api.list(pods, namespace, self._worker_selector(name))["items"]
                if _phase(p) == "Running"
            ]
            wanted = config_map(job, running)
            config = self._get_or_create("configmaps", job, wanted)
            if config is None:
                return
            if config.get("data") != wanted["data"]:
                config["data"] = wanted["data"]
                self.api.update(self.api.resource("", "v1", "configmaps"), config, namespace)
            secret_name = f"{name}-ssh"
            if self.api.try_get(self.api.resource("", "v1", "secrets"), namespace, secret_name) is None:
                self.api.create(self.api.resource("", "v1", "secrets"),
                                ssh_auth_secret(secret_name, owner(job), {"app": name}), namespace)  # fmt: skip
            workers = self._workers(job)
            if workers is None:
                return
            if launcher is None and (
                spec["launcherCreationPolicy"] == "AtStartup" or sum(map(_ready, workers)) == len(workers)
            ):
                template = (spec["mpiReplicaSpecs"]["Launcher"].get("template") or {}).get("spec") or {}
                if template.get("restartPolicy"):
                    # mpi_job_controller.go newLauncherPodTemplate: a restart policy in the pod
                    # template is replaced by the replica's, with this warning (reason
                    # podTemplateRestartPolicyReason), each time the launcher is made
                    self._event(job, "SetPodTemplateRestartPolicy",
                                "Restart policy in pod template overridden by restart policy in replica spec",
                                "Warning")  # fmt: skip
                try:
                    launcher = self.api.create(jobs, launcher_job(job), namespace)
                except ApiError as error:
                    message = f"launcher pod created failed: {error.status.get('message')}"
                    self._event(job, "MPIJobFailed", message, "Warning")
                    raise
        self._update_status(job, status, launcher, workers)
        self._write(resource, stored, status, before)

    @staticmethod
    def _worker_selector(name: str) -> str:
        return ",".join(f"{k}={v}" for k, v in default_labels(name, "worker").items())

    def _workers(self, job: dict[str, Any]) -> list[dict[str, Any]] | None:
        """getOrCreateWorker: delete indices above the replica count, create the missing ones."""
        replica = job["spec"]["mpiReplicaSpecs"].get("Worker")
        if replica is None:
            return []
        name, namespace, uid = job["metadata"]["name"], job["metadata"]["namespace"], job["metadata"]["uid"]
        pods = self.api.resource("", "v1", "pods")
        replicas = int(replica["replicas"])
        listed = self.api.list(pods, namespace, self._worker_selector(name))["items"]
        if len(listed) > replicas:
            for pod in listed:
                index = (pod["metadata"].get("labels") or {}).get(L_INDEX, "")
                if index.isdigit() and int(index) >= replicas:
                    self.api.delete(pods, namespace, pod["metadata"]["name"])
        out = []
        for i in range(replicas):
            pod = self.api.try_get(pods, namespace, f"{name}-worker-{i}")
            if pod is None:
                try:
                    pod = self.api.create(pods, worker_pod(job, i), namespace)
                except ApiError as error:
                    message = f"worker pod created failed: {error.status.get('message')}"
                    self._event(job, "MPIJobFailed", message, "Warning")
                    raise
            if not controlled_by(pod, uid):
                self._exists(job, pod["metadata"]["name"], "Pod")
                return None
            out.append(pod)
        return out

    def _delete_workers(self, job: dict[str, Any]) -> None:
        """deleteWorkerPods: under Running, workers that neither run nor wait are kept."""
        replica = job["spec"]["mpiReplicaSpecs"].get("Worker")
        if replica is None:
            return
        name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
        pods = self.api.resource("", "v1", "pods")
        for i in range(int(replica["replicas"])):
            pod = self.api.try_get(pods, namespace, f"{name}-worker-{i}")
            if pod is None or pod["metadata"].get("deletionTimestamp"):
                continue
            if job["spec"]["runPolicy"]["cleanPodPolicy"] == "Running" and _phase(pod) not in ("Running", "Pending"):
                continue
            try:
                self.api.delete(pods, namespace, pod["metadata"]["name"])
            except ApiError as error:
                if error.code != 404:
                    raise

    def _update_status(
        self, job: dict[str, Any], status: dict[str, Any], launcher: dict[str, Any] | None, workers: list[dict]
    ) -> None:
        """updateMPIJobStatus."""
        name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
        replica_statuses = status.setdefault("replicaStatuses", {})
        launcher_running = 0
        if launcher is not None:
            launcher_pods = self._launcher_pods(launcher)
            launcher_running = sum(1 for p in launcher_pods if _phase(p) == "Running")
            counts: dict[str, int] = {}
            if (launcher.get("status") or {}).get("failed"):
                counts["failed"] = int(launcher["status"]["failed"])
            launcher_status = launcher.get("status") or {}
            if has_condition(launcher_status, "Complete"):
                counts["succeeded"] = 1
                message = f"MPIJob {namespace}/{name} successfully completed."
                if launcher_status.get("completionTime"):
                    status.setdefault("completionTime", launcher_status["completionTime"])
                if set_condition(status, "Succeeded", "True", "MPIJobSucceeded", message):
                    self._event(job, "MPIJobSucceeded", message)
            elif has_condition(launcher_status, "Failed"):
                self._failed(job, status, launcher, launcher_pods)
            elif launcher_running:
                counts["active"] = launcher_running
            replica_statuses["Launcher"] = counts
        worker_counts: dict[str, int] = {}
        evicted = 0
        for pod in workers:
            key = {"Failed": "failed", "Succeeded": "succeeded", "Running": "active"}.get(_phase(pod) or "")
            if key:
                worker_counts[key] = worker_counts.get(key, 0) + 1
            if _phase(pod) == "Failed" and (pod.get("status") or {}).get("reason") == "Evicted":
                evicted += 1
        replica_statuses["Worker"] = worker_counts
        if evicted:
            message = f"{evicted}/{len(workers)} workers are evicted"
            if set_condition(status, "Failed", "True", "MPIJobEvicted", message):
                self._event(job, "MPIJobEvicted", message, "Warning")
        if launcher is not None and launcher_running >= 1 and worker_counts.get("active", 0) == len(workers):
            message = f"MPIJob {namespace}/{name} is running."
            if set_condition(status, "Running", "True", "MPIJobRunning", message):
                self._event(job, "MPIJobRunning", f"MPIJob {namespace}/{name} is running")

    def _launcher_pods(self, launcher: dict[str, Any]) -> list[dict[str, Any]]:
        """jobPods: the pods the launcher Job's selector picks and that it controls."""
        labels = ((launcher.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        if not labels:
            return []
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        pods = self.api.list(self.api.resource("", "v1", "pods"), launcher["metadata"]["namespace"], selector)
        return [p for p in pods["items"] if controlled_by(p, launcher["metadata"]["uid"])]

    def _failed(self, job: dict, status: dict, launcher: dict, launcher_pods: list[dict]) -> None:
        """updateMPIJobFailedStatus."""
        condition = next(c for c in launcher["status"]["conditions"] if c["type"] == "Failed")
        reason = condition.get("reason") or "MPIJobFailed"
        meta = job["metadata"]
        message = condition.get("message") or f"MPIJob {meta['namespace']}/{meta['name']} has failed"
        if reason == "BackoffLimitExceeded":
            failed = [p for p in launcher_pods if _phase(p) == "Failed"]
            if failed:
                last = max(failed, key=lambda p: p["metadata"].get("creationTimestamp", ""))
                reason += "/" + (last["status"].get("reason") or "")
                message = (message + ": " + (last["status"].get("message") or ""))[:1024]
        status.setdefault("completionTime", now())
        if set_condition(status, "Failed", "True", reason, message):
            self._event(job, reason, message, "Warning")

    def _write(self, resource: Any, stored: dict, status: dict, before: dict) -> None:
        if status == before:
            return
        meta = stored["metadata"]
        self.api.update(resource, {"metadata": {"name": meta["name"], "resourceVersion": meta["resourceVersion"]},
                                   "status": status}, meta["namespace"], "status")  # fmt: skip
