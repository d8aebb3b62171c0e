"""What every kubeflow.org/v1 job kind of the simulated training-operator shares: the labels
the operator puts on its pods and services, the per-kind interface (`Framework`, with the
defaults of pkg/apis/kubeflow.org/v1/*_defaults.go), and the job conditions (pkg/util/status.go).

The common reconcile loop is `training_operator.py`; each kind's pods, env and success rules
are in `pytorch_job.py`, `tf_job.py`, `mpi_job_v1.py` and `mx_job.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .apiserver import ApiServer, now

if TYPE_CHECKING:
    from .training_operator import TrainingOperator

OPERATOR = "kubeflow.org/training-operator"
L_OPERATOR = "training.kubeflow.org/operator-name"
L_JOB = "training.kubeflow.org/job-name"
L_TYPE = "training.kubeflow.org/replica-type"
L_INDEX = "training.kubeflow.org/replica-index"
L_ROLE = "training.kubeflow.org/job-role"


class Framework:
    """One kubeflow.org/v1 job kind: its names, defaults, pods' cluster env and success rules.

    The common job controller (`training_operator.TrainingOperator`) calls these hooks, as
    common/job.go calls each framework's ControllerInterface (pkg/common/interface.go:
    GetDefaultContainerName, GetDefaultContainerPortName, IsMasterRole, SetClusterSpec,
    UpdateJobStatus, ReconcilePods/ReconcileServices)."""

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


def add_env(container: dict[str, Any], name: str, value: str) -> None:
    """One more env entry on the container, after those it has (setPodEnv appends)."""
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
    """Whether the job's condition `kind` is True (util.IsSucceeded / IsFailed)."""
    return any(c["type"] == kind and c["status"] == "True" for c in status.get("conditions") or [])
