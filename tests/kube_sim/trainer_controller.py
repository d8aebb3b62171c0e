"""Kubeflow Trainer v2's TrainJob controller for the torch runtime, written from kubeflow/trainer
v2.3.0 (the JobSet and Job controllers under it are `jobset_controller.py`, `job_controller.py`):
- pkg/runtime/core/trainingruntime.go newRuntimeInfo / mergeRuntimePatches: the runtime's JobSet
  template with each `runtimePatches[].trainingRuntimeSpec.template.spec` strategically merged in
  (replicated jobs, containers, env, volumes by name); the template's and the patches' metadata
  labels and annotations go onto the JobSet; the replicated job labelled
  `trainer.kubeflow.org/trainjob-ancestor-step: trainer` runs `numNodes` pods (the TrainJob's
  `trainer.numNodes`, else the runtime's `mlPolicy.numNodes`), its `node` container taking
  `trainer.resourcesPerNode`;
- pkg/runtime/framework/plugins/jobset/builder.go Trainer: that job has replicas 1; its `node`
  container gets the trainer's image, command, args and env;
- pkg/runtime/framework/plugins/torch/torch.go EnforceMLPolicy: PET_NNODES, PET_NPROC_PER_NODE
  (`num_proc_per_node`), PET_NODE_RANK from the Job completion index annotation, PET_MASTER_ADDR
  `<trainjob>-node-0-0.<trainjob>`, PET_MASTER_PORT 29500, and container port 29500;
- jobset.go Build / Status: one JobSet named like the TrainJob, owned by it; the TrainJob's
  `Complete` / `Failed` conditions are the JobSet's `Completed` / `Failed` ones (same reason and
  message), `jobsStatus` its replicated jobs' counts.
Trainer v2.1.0 instead (`Cluster(trainer="2.1")`): no `runtimePatches`; each
`podTemplateOverrides[]` entry is strategically merged into the pod template (metadata labels and
annotations, spec) of every replicated job its `targetJobs` names (kubeflow/trainer v2.1.0
pkg/runtime/core/trainingruntime.go mergePodTemplateOverrides).
The MPI policy (`mlPolicy.mpi`, the deepspeed-distributed runtime; kubeflow/trainer v2.1.0 and
v2.3.0 pkg/runtime/framework/plugins/mpi/mpi.go, jobset/builder.go Trainer,
core/trainingruntime.go newRuntimeInfo): the launcher job (the trainer's ancestor) runs the
runtime's numNodes pods (1) with the trainer's image, command, args and env; the `node` job runs
numNodes pods, one less (at least 1) with runLauncherAsNode, and then gets the trainer's env and
resourcesPerNode too, but keeps the runtime's image and command (sshd); numProcPerNode is the
TrainJob's, else the runtime's (1: the GPUs per node when more than one); the SSH Secret
`<trainjob>-mpi-ssh-auth` and hostfile ConfigMap `<trainjob>-mpi-hostfile` (the `node` pods and,
with runLauncherAsNode, the launcher's, in the replicated jobs' order,
`<trainjob>-<rjob>-0-<i>.<trainjob> slots=<numProcPerNode>`), their volumes and mounts, and the
launcher's OMPI_MCA_* variables.
Not modelled: the DeepSpeed (beyond its MPI policy), JAX, XGBoost and Flux policies, initializers,
TorchTune, suspend, podGroupPolicy, TrainingRuntime (namespaced) lookups beyond the name, the
webhook's MPI numNodes check (its reserved OMPI_MCA_* env is in admission.py).
"""

from __future__ import annotations

import math
from typing import Any

from . import quantity
from .apiserver import ApiServer, strategic_merge
from .clone import clone
from .controller import ControllerLoop
from .errors import ApiError
from .jobset_controller import RESOURCE as JOBSETS
from .ssh_keys import ssh_auth_secret

GROUP = "trainer.kubeflow.org"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
PORT = 29500
INDEX_PATH = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
CONTROLLER = "trainer.kubeflow.org/trainjob-controller"
#: kubeflow/trainer v2.3.0 pkg/constants: MPISSHAuthSecretSuffix, MPIHostfileConfigMapSuffix
SSH_SECRET_SUFFIX = "-mpi-ssh-auth"
HOSTFILE_SUFFIX = "-mpi-hostfile"


def upsert_env(env: list[dict[str, Any]], items: list[dict[str, Any]]) -> None:
    """pkg/apply UpsertEnvVars: replace by name, else append."""
    for item in items:
        for i, existing in enumerate(env):
            if existing.get("name") == item["name"]:
                env[i] = clone(item)
                break
        else:
            env.append(clone(item))


def pod_template_overrides(js_spec: dict[str, Any], overrides: list[dict[str, Any]]) -> dict[str, Any]:
    """Trainer v2.1.0 trainingruntime.go mergePodTemplateOverrides: in order, each override's
    metadata (labels, annotations only) and spec, strategically merged into the PodTemplateSpec
    of the replicated jobs it targets."""
    js_spec = clone(js_spec)
    for override in overrides:
        targets = {t.get("name") for t in override.get("targetJobs") or []}
        patch: dict[str, Any] = {}
        meta = {k: v for k, v in (override.get("metadata") or {}).items() if k in ("labels", "annotations")}
        if meta:
            patch["metadata"] = meta
        if override.get("spec"):
            patch["spec"] = override["spec"]
        for rjob in js_spec.get("replicatedJobs") or []:
            if rjob.get("name") in targets:
                job_spec = rjob.setdefault("template", {}).setdefault("spec", {})
                job_spec["template"] = strategic_merge(job_spec.get("template") or {}, patch)
    return js_spec


def upsert_by_name(items: list[dict[str, Any]], new: list[dict[str, Any]]) -> None:
    """pkg/apply UpsertVolumes / UpsertVolumeMounts: replace by name, else append."""
    upsert_env(items, new)


def mpi_slots(mpi: dict[str, Any], trainer: dict[str, Any], resources: dict[str, Any]) -> int:
    """mpi.go EnforceMLPolicy: the TrainJob's numProcPerNode, else the runtime's (1 becomes the
    node's GPU count when it has more than one)."""
    if trainer.get("numProcPerNode") is not None:
        return int(trainer["numProcPerNode"])
    slots = int(mpi.get("numProcPerNode") or 1)
    gpus = sum(int(quantity.parse(v)) for k, v in (resources.get("limits") or {}).items() if k.endswith("gpu"))
    return gpus if slots == 1 and gpus > 1 else slots


def mpi_policy(version: tuple[int, int], name: str, js_spec: dict[str, Any], mpi: dict[str, Any], slots: int) -> None:
    """mpi.go EnforceMLPolicy (OpenMPI): the SSH Secret on the launcher's and the nodes' pods and
    at sshAuthMountPath in their `node` containers (v2.3: defaultMode 0400, the private key 0640,
    the public ones 0644; v2.1: no modes); the hostfile ConfigMap at /etc/mpi on the launcher,
    whose `node` container gets the OMPI_MCA_* variables."""
    items = [("ssh-privatekey", "id_rsa", 0o640), ("ssh-publickey", "id_rsa.pub", 0o644),
             ("ssh-publickey", "authorized_keys", 0o644)]  # fmt: skip
    secret: dict[str, Any] = {"secretName": f"{name}{SSH_SECRET_SUFFIX}"}
    if version >= (2, 3):
        secret["defaultMode"] = 0o400
        secret["items"] = [{"key": k, "path": p, "mode": m} for k, p, m in items]
    else:
        secret["items"] = [{"key": k, "path": p} for k, p, _ in items]
    for rjob in js_spec.get("replicatedJobs") or []:
        if rjob.get("name") not in ("node", "launcher"):
            continue
        pod = rjob.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {}).setdefault("spec", {})
        upsert_by_name(pod.setdefault("volumes", []), [{"name": "mpi-ssh-auth", "secret": secret}])
        launcher = rjob["name"] == "launcher"
        if launcher:
            hostfile = {"key": "hostfile", "path": "hostfile", "mode": 0o444}
            volume = {"name": "mpi-hostfile", "configMap": {"name": f"{name}{HOSTFILE_SUFFIX}", "items": [hostfile]}}
            upsert_by_name(pod["volumes"], [volume])
        for container in pod.get("containers") or []:
            if container.get("name") != "node":
                continue
            mounts = container.setdefault("volumeMounts", [])
            upsert_by_name(mounts, [{"name": "mpi-ssh-auth", "mountPath": mpi.get("sshAuthMountPath") or "/root/.ssh"}])
            if launcher:
                upsert_by_name(mounts, [{"name": "mpi-hostfile", "mountPath": "/etc/mpi"}])
                upsert_env(container.setdefault("env", []), [
                    {"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"},
                    {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
                    {"name": "OMPI_MCA_orte_set_default_slots", "value": str(slots)},
                    {"name": "OMPI_MCA_plm_rsh_args", "value": "-o ConnectionAttempts=10"},
                ])  # fmt: skip


def mpi_hostfile(name: str, js_spec: dict[str, Any], mpi: dict[str, Any], slots: int) -> str:
    """mpi.go buildHostFileConfigMap over jobset.go IdentifyPodNetwork's endpoints: in the
    replicated jobs' order, the `node` job's pods and, with runLauncherAsNode, the launcher's:
    `<trainjob>-<rjob>-<job index>-<pod index>.<subdomain> slots=<numProcPerNode>`."""
    subdomain = (js_spec.get("network") or {}).get("subdomain") or name
    lines = []
    for rjob in js_spec.get("replicatedJobs") or []:
        if rjob["name"] != "node" and not (rjob["name"] == "launcher" and mpi.get("runLauncherAsNode")):
            continue
        pods = int(((rjob.get("template") or {}).get("spec") or {}).get("parallelism") or 1)
        for job_index in range(int(rjob.get("replicas", 1))):
            lines += [f"{name}-{rjob['name']}-{job_index}-{p}.{subdomain} slots={slots}\n" for p in range(pods)]
    return "".join(lines)


class TrainerController(ControllerLoop):
    name = "trainer"

    def __init__(self, api: ApiServer):
        super().__init__(api)

    def reconcile_all(self) -> None:
        trainjobs = self.api.resource(GROUP, "v1alpha1", "trainjobs")
        for trainjob in self.api.list(trainjobs)["items"]:
            try:
                self.reconcile(trainjobs, trainjob)
            except ApiError as error:
                if error.code not in (404, 409):
                    raise

    def runtime(self, trainjob: dict[str, Any]) -> dict[str, Any] | None:
        ref = trainjob["spec"].get("runtimeRef") or {}
        if ref.get("kind", "ClusterTrainingRuntime") == "ClusterTrainingRuntime":
            return self.api.try_get(
                self.api.resource(GROUP, "v1alpha1", "clustertrainingruntimes"), "", ref.get("name", "")
            )
        try:
            resource = self.api.resource(GROUP, "v1alpha1", "trainingruntimes")
        except ApiError:
            return None
        return self.api.try_get(resource, trainjob["metadata"]["namespace"], ref.get("name", ""))

    def jobset(self, trainjob: dict[str, Any], runtime: dict[str, Any]) -> dict[str, Any]:
        """The JobSet this TrainJob becomes (without creating it)."""
        meta, spec = trainjob["metadata"], trainjob["spec"]
        template = clone(runtime["spec"]["template"])
        labels = dict((template.get("metadata") or {}).get("labels") or {})
        annotations = dict((template.get("metadata") or {}).get("annotations") or {})
        js_spec = template.get("spec") or {}
        if self.api.trainer < (2, 2):
            js_spec = pod_template_overrides(js_spec, spec.get("podTemplateOverrides") or [])
        for patch in spec.get("runtimePatches") or [] if self.api.trainer >= (2, 2) else []:
            patched = (patch.get("trainingRuntimeSpec") or {}).get("template") or {}
            labels.update((patched.get("metadata") or {}).get("labels") or {})
            annotations.update((patched.get("metadata") or {}).get("annotations") or {})
            if patched.get("spec"):
                js_spec = strategic_merge(js_spec, patched["spec"])
        ml_policy = runtime["spec"].get("mlPolicy") or {}
        trainer = spec.get("trainer") or {}
        nodes = int(trainer.get("numNodes") or ml_policy.get("numNodes") or 1)
        resources = trainer.get("resourcesPerNode") or runtime_resources(js_spec)
        proc = num_proc_per_node(trainer, ml_policy, resources, self.api.trainer)
        name = meta["name"]
        mpi = ml_policy.get("mpi")
        launcher_as_node = bool(mpi and mpi.get("runLauncherAsNode"))
        for rjob in js_spec.get("replicatedJobs") or []:
            job_labels = ((rjob.get("template") or {}).get("metadata") or {}).get("labels") or {}
            ancestor = job_labels.get(ANCESTOR) == "trainer"
            mpi_node = mpi is not None and rjob.get("name") == "node"
            if not ancestor and not mpi_node:
                continue
            job_spec = rjob.setdefault("template", {}).setdefault("spec", {})
            if ancestor:
                rjob["replicas"] = 1
            # the pod counts, written as parallelism and completions (jobset.go SyncParallelCount):
            # the trainer's job runs numNodes pods (torch.go); under MPI the runtime's numNodes
            # (trainingruntime.go newRuntimeInfo), and the `node` job numNodes, one less when the
            # launcher runs as a node (at least 1) (mpi.go EnforceMLPolicy)
            if mpi is None:
                count = nodes
            elif mpi_node:
                count = max(nodes - 1, 1) if launcher_as_node else nodes
            else:
                count = int(ml_policy.get("numNodes") or 1)
            job_spec["parallelism"] = job_spec["completions"] = count
            for container in job_spec.setdefault("template", {}).setdefault("spec", {}).get("containers") or []:
                if container.get("name") != "node":
                    continue
                if ancestor:
                    for field in ("image", "command", "args"):
                        if trainer.get(field) is not None:
                            container[field] = clone(trainer[field])
                if not ancestor and not launcher_as_node:
                    continue
                # builder.go Trainer: env (and resources, trainingruntime.go) on the trainer's job
                # and, with runLauncherAsNode, on the MPI `node` job too
                upsert_env(container.setdefault("env", []), trainer.get("env") or [])
                if resources:
                    merged = clone(container.get("resources") or {})
                    for kind in ("limits", "requests"):
                        if resources.get(kind):
                            merged[kind] = {**(merged.get(kind) or {}), **resources[kind]}
                    container["resources"] = merged
                if "torch" in ml_policy and ancestor:
                    upsert_env(container["env"], [
                        {"name": "PET_NNODES", "value": str(nodes)},
                        {"name": "PET_NPROC_PER_NODE", "value": str(proc)},
                        {"name": "PET_NODE_RANK", "valueFrom": {"fieldRef": {"fieldPath": INDEX_PATH}}},
                        {"name": "PET_MASTER_ADDR", "value": f"{name}-node-0-0.{name}"},
                        {"name": "PET_MASTER_PORT", "value": str(PORT)},
                    ])  # fmt: skip
                    ports = container.setdefault("ports", [])
                    if not any(p.get("containerPort") == PORT for p in ports):
                        ports.append({"containerPort": PORT})
        if mpi is not None:
            mpi_policy(self.api.trainer, name, js_spec, mpi, mpi_slots(mpi, trainer, resources))
        return {
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "labels": labels, "annotations": annotations, "ownerReferences": [
                {"apiVersion": f"{GROUP}/v1alpha1", "kind": "TrainJob", "name": name, "uid": meta["uid"],
                 "controller": True, "blockOwnerDeletion": True}]},
            "spec": js_spec,
        }  # fmt: skip

    def mpi_objects(self, trainjob: dict[str, Any], js_spec: dict[str, Any], mpi: dict[str, Any]) -> None:
        """mpi.go Build: the SSH Secret (immutable, made once) and the hostfile ConfigMap, both
        controlled by the TrainJob."""
        meta = trainjob["metadata"]
        name, namespace = meta["name"], meta["namespace"]
        owner = [{"apiVersion": f"{GROUP}/v1alpha1", "kind": "TrainJob", "name": name, "uid": meta["uid"],
                  "controller": True, "blockOwnerDeletion": True}]  # fmt: skip
        secrets = self.api.resource("", "v1", "secrets")
        if self.api.try_get(secrets, namespace, f"{name}{SSH_SECRET_SUFFIX}") is None:
            secret = ssh_auth_secret(f"{name}{SSH_SECRET_SUFFIX}", owner)
            secret["immutable"] = True
            self.api.create(secrets, secret, namespace)
        configmaps = self.api.resource("", "v1", "configmaps")
        trainer = trainjob["spec"].get("trainer") or {}
        slots = mpi_slots(mpi, trainer, trainer.get("resourcesPerNode") or {})
        wanted = {"metadata": {"name": f"{name}{HOSTFILE_SUFFIX}", "ownerReferences": owner},
                  "data": {"hostfile": mpi_hostfile(name, js_spec, mpi, slots)}}  # fmt: skip
        found = self.api.try_get(configmaps, namespace, wanted["metadata"]["name"])
        if found is None:
            self.api.create(configmaps, wanted, namespace)
        elif found.get("data") != wanted["data"]:
            self.api.update(configmaps, {**found, "data": wanted["data"]}, namespace)

    def reconcile(self, resource: Any, trainjob: dict[str, Any]) -> None:
        meta, spec = trainjob["metadata"], trainjob["spec"]
        if meta.get("deletionTimestamp") or spec.get("managedBy", CONTROLLER) != CONTROLLER:
            return
        runtime = self.runtime(trainjob)
        if runtime is None:
            return
        namespace = meta["namespace"]
        existing = self.api.try_get(JOBSETS, namespace, meta["name"])
        if existing is None:
            jobset = self.jobset(trainjob, runtime)
            mpi = (runtime["spec"].get("mlPolicy") or {}).get("mpi")
            if mpi is not None:
                self.mpi_objects(trainjob, jobset["spec"], mpi)
            self.api.create(JOBSETS, jobset, namespace)
            return
        status = clone(trainjob.get("status") or {})
        before = clone(status)
        conditions = {c["type"]: c for c in status.get("conditions") or []}
        for condition in (existing.get("status") or {}).get("conditions") or []:
            kind = {"Completed": "Complete", "Failed": "Failed"}.get(condition["type"])
            if kind and condition["status"] == "True":
                conditions[kind] = {**condition, "type": kind}
        if conditions:
            status["conditions"] = list(conditions.values())
        status["jobsStatus"] = [
            {k: s.get(k, 0) for k in ("name", "ready", "succeeded", "failed", "active", "suspended")}
            for s in (existing.get("status") or {}).get("replicatedJobsStatus") or []
        ]
        if status != before:
            self.api.update(
                resource,
                {"metadata": {"name": meta["name"], "resourceVersion": meta["resourceVersion"]}, "status": status},
                namespace,
                "status",
            )


def runtime_resources(js_spec: dict[str, Any]) -> dict[str, Any]:
    """pkg/runtime/runtime.go ExtractResourcePerNodeFromRuntime: the resources of the runtime's
    trainer `node` container (the TrainJob's resourcesPerNode replace them when given)."""
    for rjob in js_spec.get("replicatedJobs") or []:
        labels = ((rjob.get("template") or {}).get("metadata") or {}).get("labels") or {}
        if labels.get(ANCESTOR) != "trainer":
            continue
        pod = (((rjob.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
        for container in pod.get("containers") or []:
            if container.get("name") == "node":
                return container.get("resources") or {}
    return {}


def num_proc_per_node(
    trainer: dict[str, Any], ml_policy: dict[str, Any], resources: dict[str, Any], release: tuple[int, int]
) -> Any:
    """torch.go EnforceMLPolicy (kubeflow/trainer v2.3.0; v2.1.0 alike, with the runtime's own
    `mlPolicy.torch.numProcPerNode` as the default and `cpu` as a value): the TrainJob's
    numProcPerNode, else `auto`; `auto` without GPUs (and `cpu`) is the CPUs per node, at least 1:
    getNumCPUPerNode takes the request, the limit only when no request is given, each rounded up
    (resource.Quantity Value); a GPU node keeps `auto` (torchrun's own choice)."""
    proc: Any = trainer.get("numProcPerNode")
    if proc is None and release < (2, 2):
        proc = (ml_policy.get("torch") or {}).get("numProcPerNode")
    if proc is None:
        proc = "auto"
    if isinstance(proc, str) and proc.isdigit():
        proc = int(proc)
    limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
    gpus = sum(int(quantity.parse(v)) for k, v in limits.items() if k.endswith("gpu"))
    if proc == "cpu" or (proc == "auto" and gpus == 0):
        request, limit = requests.get("cpu"), limits.get("cpu")
        chosen = request if request and quantity.parse(request) > 0 else limit
        proc = max(1, math.ceil(quantity.parse(chosen)) if chosen else 0)
    return proc
