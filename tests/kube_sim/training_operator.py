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
Frameworks, one module each with its upstream sources: PyTorchJob (`pytorch_job.py`,
pkg/controller.v1/pytorch), TFJob (`tf_job.py`, pkg/controller.v1/tensorflow), MPIJob v1
(`mpi_job_v1.py`, pkg/controller.v1/mpi), MXJob (`mx_job.py`, v1.8.1 pkg/controller.v1/mxnet);
what they share (labels, the `Framework` interface, conditions) is `training_job.py`. A cluster
serves one MPIJob kind: this one, or mpi-operator's v2beta1 (`mpi_operator.py`).
"""

from __future__ import annotations

import time
from typing import Any

from .apiserver import ApiServer, now, rfc3339
from .clone import clone
from .controller import ControllerLoop
from .errors import ApiError
from .events import record
from .mpi_job_v1 import MPI
from .mx_job import MXNet
from .pytorch_job import PyTorch
from .tf_job import TensorFlow
from .training_job import L_INDEX, L_JOB, L_OPERATOR, L_ROLE, L_TYPE, OPERATOR, Framework, is_true, set_condition

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
        job = clone(job)
        framework.defaults(job)
        name = job["metadata"]["name"]
        status = clone(job.get("status") or {})
        if not status.get("conditions"):
            # onOwnerCreateFunc: the Created condition
            set_condition(status, "Created", "True", f"{framework.kind}Created", f"{framework.kind} {name} is created.")
        status.setdefault("replicaStatuses", {})
        before = clone(job.get("status") or {})
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
        template = clone(spec["template"])
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
