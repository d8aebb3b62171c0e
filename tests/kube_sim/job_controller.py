"""The batch/v1 Job controller, as far as training workloads use it (JobSet builds on it).

After kubernetes v1.33.0 pkg/controller/job/job_controller.go (manageJob, syncJob,
pastBackoffLimitOnFailure), indexed_job_utils.go (addCompletionIndexAnnotation,
addCompletionIndexLabel, addCompletionIndexEnvVariable, podGenerateNameWithIndex),
pkg/apis/batch/v1/defaults.go and pkg/registry/batch/job/strategy.go (generateSelector):
- defaults: completions and parallelism 1 (when both are unset), backoffLimit 6,
  completionMode NonIndexed; the selector `batch.kubernetes.io/controller-uid=<uid>` and the
  template labels `batch.kubernetes.io/{controller-uid,job-name}` (and the legacy `controller-uid`,
  `job-name`);
- pods: `generateName` `<job>-` (Indexed: `<job>-<index>-`), owned by the Job (controller,
  blockOwnerDeletion); Indexed pods get the annotation `batch.kubernetes.io/job-completion-index`,
  on Kubernetes >= 1.28 (PodIndexLabel, beta and on from 1.28) also that label, the hostname
  `<job>-<index>`, and JOB_COMPLETION_INDEX from a fieldRef to the label (>= 1.28) or the
  annotation (before);
- up to `parallelism` active pods, one per pending index; a Failed pod is replaced;
- failure: failed pods (plus container restarts under OnFailure) beyond backoffLimit: condition
  Failed, reason `BackoffLimitExceeded`, `Job has reached the specified backoff limit`, active
  pods deleted; success: `completions` succeeded pods (Indexed: every index): condition Complete;
  from 1.31 the interim `FailureTarget` / `SuccessCriteriaMet` conditions come first (KEP-4368).
Not modelled: the job-tracking finalizer, podFailurePolicy, successPolicy, backoffLimitPerIndex,
suspend, activeDeadlineSeconds, ttlSecondsAfterFinished.
"""

from __future__ import annotations

from typing import Any

from .apiserver import ApiServer, now
from .clone import clone
from .controller import ControllerLoop
from .errors import ApiError
from .events import record

INDEX = "batch.kubernetes.io/job-completion-index"
CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"


def version_at_least(api: ApiServer, major: int, minor: int) -> bool:
    parts = [int(p) for p in api.version.split(".")[:2]]
    return tuple(parts) >= (major, minor)


def default_job(job: dict[str, Any]) -> None:
    """defaults.go SetDefaults_Job and strategy.go generateSelector (after the uid is known)."""
    spec = job.setdefault("spec", {})
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("manualSelector", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    uid, name = job["metadata"]["uid"], job["metadata"]["name"]
    if not spec.get("manualSelector"):
        spec["selector"] = {"matchLabels": {CONTROLLER_UID: uid}}
        labels = spec.setdefault("template", {}).setdefault("metadata", {}).setdefault("labels", {})
        labels.update({CONTROLLER_UID: uid, JOB_NAME: name, "controller-uid": uid, "job-name": name})


class JobController(ControllerLoop):
    name = "job-controller"

    def __init__(self, api: ApiServer):
        super().__init__(api)

    def reconcile_all(self) -> None:
        jobs = self.api.resource("batch", "v1", "jobs")
        for job in self.api.list(jobs)["items"]:
            try:
                self.reconcile(jobs, job)
            except ApiError as error:
                if error.code not in (404, 409):
                    raise

    def reconcile(self, resource: Any, job: dict[str, Any]) -> None:
        meta, spec = job["metadata"], job["spec"]
        if meta.get("deletionTimestamp"):
            return
        status = clone(job.get("status") or {})
        before = clone(status)
        conditions = status.get("conditions") or []
        if any(c["type"] in ("Complete", "Failed") and c["status"] == "True" for c in conditions):
            return
        pods_resource = self.api.resource("", "v1", "pods")
        listed = self.api.list(pods_resource, meta["namespace"], f"{CONTROLLER_UID}={meta['uid']}")["items"]
        pods = [p for p in listed if _controlled_by(p, meta["uid"])]
        status.setdefault("startTime", now())
        indexed = spec.get("completionMode") == "Indexed"
        completions = spec.get("completions")
        parallelism = int(spec.get("parallelism", 1))
        active = [p for p in pods if p["status"].get("phase") not in ("Succeeded", "Failed")
                  and not p["metadata"].get("deletionTimestamp")]  # fmt: skip
        succeeded = [p for p in pods if p["status"].get("phase") == "Succeeded"]
        failed = [p for p in pods if p["status"].get("phase") == "Failed"]
        restarts = 0
        if spec["template"]["spec"].get("restartPolicy") == "OnFailure":
            # pastBackoffLimitOnFailure: container restarts of the active pods count as failures
            for pod in active:
                for field in ("initContainerStatuses", "containerStatuses"):
                    restarts += sum(int(s.get("restartCount", 0)) for s in pod["status"].get(field) or [])
        status.update(active=len(active), succeeded=len(succeeded), failed=len(failed))
        status["ready"] = sum(
            1
            for p in active
            if any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or [])
        )
        done_indexes = sorted({int(p["metadata"].get("annotations", {}).get(INDEX, -1)) for p in succeeded})
        if indexed:
            status["completedIndexes"] = _ranges(done_indexes)
        name = meta["name"]
        if len(failed) + restarts > int(spec.get("backoffLimit", 6)):
            for pod in active:
                self._delete(pods_resource, pod)
            self._finish(
                status, "Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit", "FailureTarget"
            )
            record(
                self.api,
                job,
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
                "Warning",
                "job-controller",
            )
        elif (indexed and completions is not None and len(done_indexes) >= int(completions)) or (
            not indexed and completions is not None and len(succeeded) >= int(completions)
        ):
            status["completionTime"] = status.get("completionTime") or now()
            self._finish(
                status,
                "Complete",
                "CompletionsReached",
                "Reached expected number of succeeded pods",
                "SuccessCriteriaMet",
            )
            record(self.api, job, "Completed", "Job completed", "Normal", "job-controller")
        else:
            wanted: list[int | None]
            if indexed:
                busy = {int(p["metadata"].get("annotations", {}).get(INDEX, -1)) for p in active}
                wanted = [i for i in range(int(completions or 0)) if i not in busy and i not in done_indexes]
            else:
                remaining = (int(completions) - len(succeeded)) if completions is not None else parallelism
                wanted = [None] * max(0, min(parallelism, remaining) - len(active))
            for index in wanted[: max(0, parallelism - len(active))]:
                self._create_pod(job, index)
        if status != before:
            self.api.update(resource, {"metadata": {"name": name}, "status": status}, meta["namespace"], "status")

    def _finish(self, status: dict, kind: str, reason: str, message: str, interim: str) -> None:
        conditions = status.setdefault("conditions", [])
        stamp = now()
        if version_at_least(self.api, 1, 31):
            conditions.append(
                {
                    "type": interim,
                    "status": "True",
                    "reason": reason,
                    "message": message,
                    "lastProbeTime": stamp,
                    "lastTransitionTime": stamp,
                }
            )
        conditions.append(
            {
                "type": kind,
                "status": "True",
                "reason": reason,
                "message": message,
                "lastProbeTime": stamp,
                "lastTransitionTime": stamp,
            }
        )

    def _create_pod(self, job: dict, index: int | None) -> None:
        meta = job["metadata"]
        template = clone(job["spec"]["template"])
        pod_meta = template.setdefault("metadata", {})
        spec = template["spec"]
        new_label = version_at_least(self.api, 1, 28)
        if index is not None:
            pod_meta.setdefault("annotations", {})[INDEX] = str(index)
            if new_label:
                pod_meta.setdefault("labels", {})[INDEX] = str(index)
            spec["hostname"] = f"{meta['name']}-{index}"
            where = f"metadata.labels['{INDEX}']" if new_label else f"metadata.annotations['{INDEX}']"
            for field in ("initContainers", "containers"):
                for container in spec.get(field) or []:
                    env = container.setdefault("env", [])
                    if not any(e.get("name") == "JOB_COMPLETION_INDEX" for e in env):
                        env.append({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {"fieldPath": where}}})
        pod = {
            "metadata": {
                "generateName": f"{meta['name']}-{index}-" if index is not None else f"{meta['name']}-",
                "labels": pod_meta.get("labels") or {},
                **({"annotations": pod_meta["annotations"]} if pod_meta.get("annotations") else {}),
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": spec,
        }
        try:
            created = self.api.create(self.api.resource("", "v1", "pods"), pod, meta["namespace"])
            record(
                self.api,
                job,
                "SuccessfulCreate",
                f"Created pod: {created['metadata']['name']}",
                "Normal",
                "job-controller",
            )
        except ApiError as error:
            record(
                self.api,
                job,
                "FailedCreate",
                f"Error creating: {error.status.get('message')}",
                "Warning",
                "job-controller",
            )

    def _delete(self, resource: Any, pod: dict) -> None:
        try:
            self.api.delete(resource, pod["metadata"]["namespace"], pod["metadata"]["name"])
        except ApiError as error:
            if error.code != 404:
                raise


def _controlled_by(obj: dict[str, Any], uid: str) -> bool:
    return any(r.get("uid") == uid and r.get("controller") for r in obj["metadata"].get("ownerReferences") or [])


def _ranges(indexes: list[int]) -> str:
    """status.completedIndexes: `1,3-5,7`."""
    out, start, prev = [], None, None
    for i in indexes:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            out.append(f"{start}-{prev}" if prev != start else str(start))
            start = prev = i
    if start is not None:
        out.append(f"{start}-{prev}" if prev != start else str(start))
    return ",".join(out)
