"""`kubeflow`: the training operator's v1 jobs (TFJob, PyTorchJob, MXJob, MPIJob).

One replica spec per role, so one pod template per role: settings that differ between indices
of a role (polyaxon's per-index resources) cannot be expressed and are refused, naming the
role and indices, never dropped. The operator creates the pods and a Service per replica
(`<job>-<type>-<index>`) and sets the framework's variables (TF_CONFIG, MASTER_ADDR/RANK,
DMLC_*); we add ours: PX_TASK_INDEX comes from the pod's `training.kubeflow.org/replica-index`
label through the downward API, since the template is shared by every index, and PX_CLUSTER is
built inside the pod (`pod_entry.py`) from the run's ConfigMap, so no template holds every address.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...cluster import KUBERNETES_PORTS, kubernetes_dns_addresses, mpi_world_size
from ...topology import ReplicaSpec, Topology
from ..base import BackendError
from .payload import ENTRY, RUN_DIR
from .podspec import RenderContext, configmap, container, env_list, pod_spec
from .replica_pods import REPLICA_INDEX_LABEL, replica_pods

API_VERSION = "kubeflow.org/v1"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"


@dataclass(frozen=True)
class JobKind:
    kind: str
    plural: str
    specs_field: str  # tfReplicaSpecs, ...
    container: str  # the container name the operator looks for
    replica_types: dict[str, str]  # our role -> the operator's replica type


def job_kind(framework: str | None, tf_master_type: str = "chief") -> JobKind:
    if framework == "tensorflow":
        master = "Chief" if tf_master_type == "chief" else "Master"
        types = {"master": master, "worker": "Worker", "ps": "PS", "evaluator": "Evaluator"}
        return JobKind("TFJob", "tfjobs", "tfReplicaSpecs", "tensorflow", types)
    if framework == "pytorch":
        return JobKind(
            "PyTorchJob", "pytorchjobs", "pytorchReplicaSpecs", "pytorch", {"master": "Master", "worker": "Worker"}
        )
    if framework == "mxnet":
        types = {"master": "Scheduler", "ps": "Server", "worker": "Worker"}
        return JobKind("MXJob", "mxjobs", "mxReplicaSpecs", "mxnet", types)
    if framework in ("horovod", "mpi"):
        return JobKind("MPIJob", "mpijobs", "mpiReplicaSpecs", "mpi", {"master": "Launcher", "worker": "Worker"})
    raise BackendError(
        "backend kubeflow runs a framework's job (tensorflow, pytorch, mxnet, horovod/mpi); this topology has "
        "no framework: set framework, or use backend native"
    )


UNIFORM_FIELDS = ("resources", "image", "env", "node_selector", "restart_policy", "max_restarts")


def uniform_role_spec(role: str, specs: list[ReplicaSpec]) -> ReplicaSpec:
    """The one spec of a role, or an error naming the indices whose settings differ."""
    first = specs[0]
    differing = [s.index for s in specs[1:] if any(getattr(s, f) != getattr(first, f) for f in UNIFORM_FIELDS)]
    if differing:
        fields = sorted(
            {f for s in specs[1:] if s.index in differing for f in UNIFORM_FIELDS if getattr(s, f) != getattr(first, f)}
        )
        raise BackendError(
            f"environment.replicas.{role}: indices {', '.join(map(str, differing))} differ from {role}[0] in "
            f"{', '.join(fields)}, which backend kubeflow cannot express (one template per role): "
            "use backend native, or give every index the same settings"
        )
    return first


def _by_role(ctx: RenderContext) -> dict[str, list[ReplicaSpec]]:
    out: dict[str, list[ReplicaSpec]] = {}
    for spec in ctx.topology.replicas():
        out.setdefault(spec.role, []).append(spec)
    return out


def cluster(topology: Topology, base: str, namespace: str) -> tuple[dict[str, list[str]], str]:
    """The operator's per-replica Service names (`<job>-<type>-<index>.<namespace>.svc:<port>`);
    the operator sets the framework's variables, the pods build only PX_CLUSTER."""
    kind = job_kind(topology.framework, topology.environment.tf_master_type)
    lower = {role: t.lower() for role, t in kind.replica_types.items()}
    return kubernetes_dns_addresses(topology, base, namespace, role_names=lower), "px"


def _role_env(ctx: RenderContext, role: str, spec: ReplicaSpec) -> list[dict[str, Any]]:
    topology = ctx.topology
    env = dict(spec.env)
    env.update(PX_RUN_ID=ctx.run_id, PX_TASK_TYPE=role, PX_FRAMEWORK=topology.framework or "")
    env["PYTHONUNBUFFERED"] = "1"
    if topology.is_mpi:
        env.update(
            PX_MPI_WORLD_SIZE=str(mpi_world_size(topology)),
            PX_MPI_SLOTS=str(topology.environment.processes_per_replica),
        )
    items = env_list(env, ctx)
    items.append(
        {"name": "PX_TASK_INDEX", "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{REPLICA_INDEX_LABEL}']"}}}
    )
    return items


def _mpirun(ctx: RenderContext) -> list[str]:
    """The launcher's command: every worker slot runs the entry point; our variables go along
    (PX_CLUSTER is built by each rank's entry point from the ConfigMap, mounted on every worker)."""
    topology = ctx.topology
    forwarded = ["PX_RUN_ID", "PX_FRAMEWORK", "PX_MPI_SLOTS", "PX_MPI_WORLD_SIZE", "PYTHONUNBUFFERED"]
    forwarded += sorted(topology.replica("worker", 0).env) if topology.counts().get("worker") else []
    cmd = ["mpirun", "--hostfile", "/etc/mpi/hostfile", "-np", str(mpi_world_size(topology))]
    for name in forwarded:
        cmd += ["-x", name]
    return [*cmd, "python", ENTRY, RUN_DIR]


def render(ctx: RenderContext) -> list[dict[str, Any]]:
    """ConfigMap (the owner) and the job."""
    topology = ctx.topology
    kind = job_kind(topology.framework, topology.environment.tf_master_type)
    port = KUBERNETES_PORTS[topology.framework]
    replica_specs: dict[str, Any] = {}
    backoff = 0
    for role, specs in _by_role(ctx).items():
        spec = uniform_role_spec(role, specs)
        backoff = max(backoff, spec.max_restarts)
        cmd = None
        if topology.is_mpi:
            cmd = _mpirun(ctx) if role == "master" else ["/usr/sbin/sshd", "-De"]
        env = _role_env(ctx, role, spec)
        podspec = pod_spec(
            ctx, spec, [container(kind.container, spec, ctx, env, None if topology.is_mpi else port, cmd)]
        )
        meta = {"labels": {**ctx.labels(), **replica_pods("kubeflow").pod_labels(role)}}
        if ctx.settings.annotations:
            meta["annotations"] = dict(ctx.settings.annotations)
        replica_specs[kind.replica_types[role]] = {
            "replicas": len(specs),
            "restartPolicy": spec.restart_policy,
            "template": {"metadata": meta, "spec": podspec},
        }
    run_policy: dict[str, Any] = {"cleanPodPolicy": ctx.settings.clean_pod_policy, "backoffLimit": backoff}
    if ctx.settings.ttl_seconds_after_finished is not None:
        run_policy["ttlSecondsAfterFinished"] = ctx.settings.ttl_seconds_after_finished
    job_spec: dict[str, Any] = {kind.specs_field: replica_specs, "runPolicy": run_policy}
    if kind.kind == "MXJob":
        job_spec["jobMode"] = "MXTrain"
    elif kind.kind == "MPIJob":
        job_spec["slotsPerWorker"] = topology.environment.processes_per_replica
    elif kind.kind == "PyTorchJob" and topology.environment.processes_per_replica > 1:
        job_spec["nprocPerNode"] = str(topology.environment.processes_per_replica)
    job = {"apiVersion": API_VERSION, "kind": kind.kind, "metadata": ctx.metadata(ctx.base), "spec": job_spec}
    return [configmap(ctx), job]
