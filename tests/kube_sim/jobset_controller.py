"""JobSet (jobset.x-k8s.io/v1alpha2), written from kubernetes-sigs/jobset v0.8.2 (the version
Kubeflow Trainer v2.x installs alongside; Trainer builds on it):
- the defaulting webhook (pkg/webhooks/jobset_webhook.go Default): each replicated job's
  completionMode Indexed, its pods' restartPolicy OnFailure, successPolicy operator All,
  network.enableDNSHostnames and publishNotReadyAddresses true;
- the controller (pkg/controllers/jobset_controller.go constructJob, labelAndAnnotateObject,
  GetSubdomain, the headless Service): one Job per replica, `<jobset>-<replicatedJob>-<index>`,
  the Job and its pod template labelled and annotated `jobset.sigs.k8s.io/{jobset-name,
  replicatedjob-name, replicatedjob-replicas, global-replicas, job-index, job-global-index,
  job-key (sha1 of "<ns>/<job>"), restart-attempt}`; with DNS hostnames the pods' subdomain is
  `network.subdomain` or the JobSet's name, and a headless Service of that name selects the
  JobSet's pods (clusterIP None, publishNotReadyAddresses) - so pods answer as
  `<jobset>-<rjob>-<jobIndex>-<podIndex>.<subdomain>`;
- status (pkg/constants/constants.go reasons and messages): `Completed` (`AllJobsCompleted`,
  `jobset completed successfully`) when every Job completed (operator All), `Failed`
  (`FailedJobs`, `jobset failed due to one or more job failures`) when a Job failed and
  failurePolicy.maxRestarts (default 0) is used up, else a restart: every Job deleted and
  `status.restarts` + 1 (the restart-attempt label); `terminalState`; `replicatedJobsStatus`.
- `successPolicy.targetReplicatedJobs` (only those jobs must complete; then the Jobs still active
  are deleted, jobSetFinished -> deleteJobs), `dependsOn` (pkg/controllers/depends_on.go: a
  replicated job's Jobs are created once its dependency's Jobs are all Ready - succeeded + ready
  pods reaching parallelism - or all Complete).
Not modelled: startupPolicy, failure policy rules, exclusive placement, suspend, coordinator.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .apiserver import ApiServer, now
from .clone import clone
from .controller import ControllerLoop
from .errors import ApiError
from .events import record
from .resources import Resource

GROUP = "jobset.x-k8s.io"
K = "jobset.sigs.k8s.io/"
#: JobSet's CRD is not among tests/data/crds: served without a schema (no validation, no pruning)
RESOURCE = Resource(GROUP, "v1alpha2", "jobsets", "JobSet", status_subresource=True,
                    schema={"type": "object", "x-kubernetes-preserve-unknown-fields": True})  # fmt: skip


def default_jobset(jobset: dict[str, Any]) -> None:
    spec = jobset.setdefault("spec", {})
    spec.setdefault("successPolicy", {"operator": "All"})
    for rjob in spec.get("replicatedJobs") or []:
        rjob.setdefault("replicas", 1)
        job_spec = rjob.setdefault("template", {}).setdefault("spec", {})
        job_spec.setdefault("completionMode", "Indexed")
        pod_spec = job_spec.setdefault("template", {}).setdefault("spec", {})
        pod_spec.setdefault("restartPolicy", "OnFailure")
    network = spec.setdefault("network", {})
    network.setdefault("enableDNSHostnames", True)
    network.setdefault("publishNotReadyAddresses", True)


class JobSetWebhook:
    def __init__(self, api: ApiServer):
        self.api = api

    def install(self) -> None:
        self.api.admission.append(self)

    def __call__(self, operation: str, resource: Resource, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if resource.group == GROUP and resource.plural == "jobsets" and operation == "CREATE":
            default_jobset(obj)


def install(api: ApiServer) -> None:
    api.register(RESOURCE)
    JobSetWebhook(api).install()


class JobSetController(ControllerLoop):
    name = "jobset"

    def __init__(self, api: ApiServer):
        super().__init__(api)

    def reconcile_all(self) -> None:
        for jobset in self.api.list(RESOURCE)["items"]:
            try:
                self.reconcile(jobset)
            except ApiError as error:
                if error.code not in (404, 409):
                    raise

    def reconcile(self, jobset: dict[str, Any]) -> None:
        meta, spec = jobset["metadata"], jobset["spec"]
        if meta.get("deletionTimestamp"):
            return
        status = clone(jobset.get("status") or {})
        before = clone(status)
        if status.get("terminalState"):
            return
        namespace, name = meta["namespace"], meta["name"]
        jobs_resource = self.api.resource("batch", "v1", "jobs")
        listed = self.api.list(jobs_resource, namespace, f"{K}jobset-name={name}")["items"]
        owned = [j for j in listed if _controlled_by(j, meta["uid"])]
        restarts = int(status.get("restarts", 0))
        current = [j for j in owned if j["metadata"].get("labels", {}).get(f"{K}restart-attempt") == str(restarts)]
        for old in owned:  # jobs of an earlier attempt go
            if old not in current and not old["metadata"].get("deletionTimestamp"):
                self.api.delete(jobs_resource, namespace, old["metadata"]["name"], propagation="Foreground")

        def condition_of(job: dict, kind: str) -> bool:
            return any(
                c["type"] == kind and c["status"] == "True" for c in (job.get("status") or {}).get("conditions") or []
            )

        failed = [j for j in current if condition_of(j, "Failed")]
        if failed:
            if restarts < int((spec.get("failurePolicy") or {}).get("maxRestarts", 0)):
                status["restarts"] = restarts + 1
                record(
                    self.api,
                    jobset,
                    "Restarting",
                    f"restarting jobset, attempt {restarts + 1}",
                    "Warning",
                    "jobset-controller",
                )
            else:
                self._terminal(status, "Failed", "FailedJobs", "jobset failed due to one or more job failures")
            self._write(jobset, status, before)
            return

        def finished(job: dict) -> bool:
            return condition_of(job, "Complete") or condition_of(job, "Failed")

        statuses = []
        for rjob in spec.get("replicatedJobs") or []:
            mine = [j for j in current if j["metadata"]["labels"].get(f"{K}replicatedjob-name") == rjob["name"]]
            statuses.append({
                "name": rjob["name"],
                "ready": sum(1 for j in mine if _job_ready(j) and not finished(j)),
                "succeeded": sum(1 for j in mine if condition_of(j, "Complete")),
                "failed": sum(1 for j in mine if condition_of(j, "Failed")),
                "active": sum(1 for j in mine if int((j.get("status") or {}).get("active", 0)) > 0),
                "suspended": 0,
            })  # fmt: skip
        status["replicatedJobsStatus"] = statuses
        replicas = {r["name"]: int(r.get("replicas", 1)) for r in spec.get("replicatedJobs") or []}
        # executeSuccessPolicy (operator All): every Job of the targeted replicated jobs (all when
        # none are named) completed; then the Jobs still active are deleted (jobSetFinished)
        targets = (spec.get("successPolicy") or {}).get("targetReplicatedJobs") or list(replicas)
        succeeded = sum(s["succeeded"] for s in statuses if s["name"] in targets)
        if current and succeeded >= sum(replicas[name] for name in targets if name in replicas):
            self._terminal(status, "Completed", "AllJobsCompleted", "jobset completed successfully")
            for job in current:
                if not finished(job) and not job["metadata"].get("deletionTimestamp"):
                    self.api.delete(jobs_resource, namespace, job["metadata"]["name"], propagation="Foreground")
            self._write(jobset, status, before)
            return
        self._ensure_service(jobset)
        have = {j["metadata"]["name"] for j in current}
        for rjob in spec.get("replicatedJobs") or []:
            if not _dependency_reached(rjob, replicas, statuses):
                continue
            for index in range(int(rjob.get("replicas", 1))):
                job_name = f"{name}-{rjob['name']}-{index}"
                if job_name not in have:
                    self._create_job(jobset, rjob, index, restarts)
        self._write(jobset, status, before)

    def _terminal(self, status: dict, kind: str, reason: str, message: str) -> None:
        stamp = now()
        status.setdefault("conditions", []).append(
            {"type": kind, "status": "True", "reason": reason, "message": message, "lastTransitionTime": stamp}
        )
        status["terminalState"] = kind

    def _write(self, jobset: dict, status: dict, before: dict) -> None:
        if status != before:
            self.api.update(
                RESOURCE,
                {
                    "metadata": {
                        "name": jobset["metadata"]["name"],
                        "resourceVersion": jobset["metadata"]["resourceVersion"],
                    },
                    "status": status,
                },
                jobset["metadata"]["namespace"],
                "status",
            )

    def _owner(self, jobset: dict) -> list[dict]:
        return [
            {
                "apiVersion": f"{GROUP}/v1alpha2",
                "kind": "JobSet",
                "name": jobset["metadata"]["name"],
                "uid": jobset["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]

    def _subdomain(self, jobset: dict) -> str:
        return (jobset["spec"].get("network") or {}).get("subdomain") or jobset["metadata"]["name"]

    def _ensure_service(self, jobset: dict) -> None:
        network = jobset["spec"].get("network") or {}
        if not network.get("enableDNSHostnames"):
            return
        services = self.api.resource("", "v1", "services")
        namespace, subdomain = jobset["metadata"]["namespace"], self._subdomain(jobset)
        if self.api.try_get(services, namespace, subdomain) is not None:
            return
        service = {
            "metadata": {"name": subdomain, "ownerReferences": self._owner(jobset)},
            "spec": {
                "clusterIP": "None",
                "selector": {f"{K}jobset-name": jobset["metadata"]["name"]},
                "publishNotReadyAddresses": network.get("publishNotReadyAddresses", True),
            },
        }
        try:
            self.api.create(services, service, namespace)
        except ApiError as error:
            record(
                self.api,
                jobset,
                "HeadlessServiceCreationFailed",
                str(error.status.get("message")),
                "Warning",
                "jobset-controller",
            )

    def _create_job(self, jobset: dict, rjob: dict, index: int, restarts: int) -> None:
        meta, spec = jobset["metadata"], jobset["spec"]
        name = f"{meta['name']}-{rjob['name']}-{index}"
        replicas = [int(r.get("replicas", 1)) for r in spec["replicatedJobs"]]
        offset = 0
        for r in spec["replicatedJobs"]:
            if r["name"] == rjob["name"]:
                break
            offset += int(r.get("replicas", 1))
        tags = {
            f"{K}jobset-name": meta["name"], f"{K}replicatedjob-name": rjob["name"],
            f"{K}restart-attempt": str(restarts), f"{K}replicatedjob-replicas": str(int(rjob.get("replicas", 1))),
            f"{K}global-replicas": str(sum(replicas)), f"{K}job-index": str(index),
            f"{K}job-key": hashlib.sha1(f"{meta['namespace']}/{name}".encode()).hexdigest(),
            f"{K}job-global-index": str(offset + index),
        }  # fmt: skip
        template = clone(rjob.get("template") or {})
        job_spec = template.get("spec") or {}
        pod_template = job_spec.setdefault("template", {})
        pod_meta = pod_template.setdefault("metadata", {})
        pod_meta["labels"] = {**(pod_meta.get("labels") or {}), **tags}
        pod_meta["annotations"] = {**(pod_meta.get("annotations") or {}), **tags}
        if (spec.get("network") or {}).get("enableDNSHostnames"):
            pod_template.setdefault("spec", {})["subdomain"] = self._subdomain(jobset)
        job_meta = template.get("metadata") or {}
        job = {
            "metadata": {"name": name, "labels": {**(job_meta.get("labels") or {}), **tags},
                         "annotations": {**(job_meta.get("annotations") or {}), **tags},
                         "ownerReferences": self._owner(jobset)},
            "spec": job_spec,
        }  # fmt: skip
        try:
            self.api.create(self.api.resource("batch", "v1", "jobs"), job, meta["namespace"])
        except ApiError as error:
            if error.code != 409:
                record(
                    self.api,
                    jobset,
                    "JobCreationFailed",
                    str(error.status.get("message")),
                    "Warning",
                    "jobset-controller",
                )


def _job_ready(job: dict[str, Any]) -> bool:
    """calculateReplicatedJobStatuses: a Job is ready when its succeeded and ready pods reach its
    parallelism (jobset_controller.go, `job.Status.Succeeded+ready >= podsCount`)."""
    status, spec = job.get("status") or {}, job.get("spec") or {}
    pods = int(spec.get("parallelism", 1))
    if spec.get("completions") is not None:
        pods = min(pods, int(spec["completions"]))
    return int(status.get("succeeded", 0)) + int(status.get("ready", 0)) >= pods


def _dependency_reached(rjob: dict[str, Any], replicas: dict[str, int], statuses: list[dict[str, Any]]) -> bool:
    """depends_on.go dependencyReachedStatus: the one dependency's Jobs all Complete, or all Ready
    (ready + failed + succeeded)."""
    depends = rjob.get("dependsOn")
    if not depends:
        return True
    wanted = depends[0]
    found = next((s for s in statuses if s["name"] == wanted.get("name")), None)
    if found is None:
        return False
    if wanted.get("status") == "Complete":
        return replicas.get(wanted["name"]) == found["succeeded"]
    return replicas.get(wanted["name"]) == found["failed"] + found["ready"] + found["succeeded"]


def _controlled_by(obj: dict[str, Any], uid: str) -> bool:
    return any(r.get("uid") == uid and r.get("controller") for r in obj["metadata"].get("ownerReferences") or [])
