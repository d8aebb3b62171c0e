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
  (`trainer.numProcPerNode`, else "auto", which without GPUs becomes the CPUs per node, at least
  1), PET_NODE_RANK from the Job completion index annotation, PET_MASTER_ADDR
  `<trainjob>-node-0-0.<trainjob>`, PET_MASTER_PORT 29500, and container port 29500;
- jobset.go Build / Status: one JobSet named like the TrainJob, owned by it; the TrainJob's
  `Complete` / `Failed` conditions are the JobSet's `Completed` / `Failed` ones (same reason and
  message), `jobsStatus` its replicated jobs' counts.
Trainer v2.1.0 instead (`Cluster(trainer="2.1")`): no `runtimePatches`; each
`podTemplateOverrides[]` entry is strategically merged into the pod template (metadata labels and
annotations, spec) of every replicated job its `targetJobs` names (kubeflow/trainer v2.1.0
pkg/runtime/core/trainingruntime.go mergePodTemplateOverrides).
Not modelled: the MPI, DeepSpeed, JAX, XGBoost and Flux policies, initializers, TorchTune,
suspend, podGroupPolicy, TrainingRuntime (namespaced) lookups beyond the name.
"""

from __future__ import annotations

import copy
from typing import Any

from . import quantity
from .apiserver import ApiServer, strategic_merge
from .controller import ControllerLoop
from .errors import ApiError
from .jobset_controller import RESOURCE as JOBSETS

GROUP = "trainer.kubeflow.org"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
PORT = 29500
INDEX_PATH = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
CONTROLLER = "trainer.kubeflow.org/trainjob-controller"


def upsert_env(env: list[dict[str, Any]], items: list[dict[str, Any]]) -> None:
    """pkg/apply UpsertEnvVars: replace by name, else append."""
    for item in items:
        for i, existing in enumerate(env):
            if existing.get("name") == item["name"]:
                env[i] = copy.deepcopy(item)
                break
        else:
            env.append(copy.deepcopy(item))


def pod_template_overrides(js_spec: dict[str, Any], overrides: list[dict[str, Any]]) -> dict[str, Any]:
    """Trainer v2.1.0 trainingruntime.go mergePodTemplateOverrides: in order, each override's
    metadata (labels, annotations only) and spec, strategically merged into the PodTemplateSpec
    of the replicated jobs it targets."""
    js_spec = copy.deepcopy(js_spec)
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
        template = copy.deepcopy(runtime["spec"]["template"])
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
        resources = trainer.get("resourcesPerNode") or {}
        proc: Any = trainer.get("numProcPerNode")
        if proc is None:
            gpus = sum(int(quantity.parse(v)) for k, v in (resources.get("limits") or {}).items() if k.endswith("gpu"))
            if gpus == 0:
                cpu = (resources.get("limits") or {}).get("cpu") or (resources.get("requests") or {}).get("cpu")
                proc = max(1, int(quantity.parse(cpu))) if cpu else 1
            else:
                proc = "auto"
        name = meta["name"]
        for rjob in js_spec.get("replicatedJobs") or []:
            job_labels = ((rjob.get("template") or {}).get("metadata") or {}).get("labels") or {}
            if job_labels.get(ANCESTOR) != "trainer":
                continue
            rjob["replicas"] = 1
            job_spec = rjob.setdefault("template", {}).setdefault("spec", {})
            job_spec["parallelism"] = job_spec["completions"] = nodes  # SyncParallelCount
            for container in job_spec.setdefault("template", {}).setdefault("spec", {}).get("containers") or []:
                if container.get("name") != "node":
                    continue
                for field in ("image", "command", "args"):
                    if trainer.get(field) is not None:
                        container[field] = copy.deepcopy(trainer[field])
                upsert_env(container.setdefault("env", []), trainer.get("env") or [])
                if resources:
                    merged = copy.deepcopy(container.get("resources") or {})
                    for kind in ("limits", "requests"):
                        if resources.get(kind):
                            merged[kind] = {**(merged.get(kind) or {}), **resources[kind]}
                    container["resources"] = merged
                if "torch" in ml_policy:
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
        return {
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "labels": labels, "annotations": annotations, "ownerReferences": [
                {"apiVersion": f"{GROUP}/v1alpha1", "kind": "TrainJob", "name": name, "uid": meta["uid"],
                 "controller": True, "blockOwnerDeletion": True}]},
            "spec": js_spec,
        }  # fmt: skip

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
            self.api.create(JOBSETS, self.jobset(trainjob, runtime), namespace)
            return
        status = copy.deepcopy(trainjob.get("status") or {})
        before = copy.deepcopy(status)
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
