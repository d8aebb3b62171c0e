"""`kubeflow`: the training operator's v1 jobs (TFJob, PyTorchJob, MXJob, MPIJob).

One replica spec per role, so one pod template per role: settings that differ between indices
of a role (polyaxon's per-index resources) cannot be expressed and are refused, naming the
role and indices, never dropped. The operator creates the pods and a Service per replica
(`<job>-<type>-<index>`) and sets the framework's variables (TF_CONFIG, MASTER_ADDR/RANK,
DMLC_*); we add ours: PX_TASK_INDEX comes from the pod's `training.kubeflow.org/replica-index`
label through the downward API, since the template is shared by every index, and PX_CLUSTER is
built inside the pod (`pod/entry.py`) from the run's ConfigMap, so no template holds every address.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ....cluster import KUBERNETES_PORTS, mpi_world_size
from ....topology import ReplicaSpec, Topology
from ...base import BackendError
from ..shared.payload import ENTRY, RUN_DIR
from ..shared.podspec import (
    SHARED_DIR_ENV,
    UNIFORM_FIELDS,
    RenderContext,
    configmap,
    container,
    env_list,
    pod_spec,
    shared_run_dir,
)
from ..shared.replica_pods import REPLICA_INDEX_LABEL, replica_pods
from ..shared.run_objects import Flavour

API_VERSION = "kubeflow.org/v1"
#: mpi-operator's MPIJob (v0.4 and later; kubeflow/mpi-operator v0.6.0 pkg/apis/kubeflow/v2beta1)
MPI_OPERATOR_API_VERSION = "kubeflow.org/v2beta1"
#: The replica restart policies mpi-operator accepts (v0.6.0 pkg/apis/kubeflow/validation/validation.go
#: validRestartPolicies); an MPIJob with another gets a ValidationError event and no pods.
MPI_OPERATOR_RESTART_POLICIES = ("Never", "OnFailure")
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
#: An elastic PyTorchJob's container: torchrun, the elastic agent, reading the operator's PET_*
#: variables (rendezvous, nodes, restarts), runs the entry point as each of its worker processes.
TORCHRUN = ["python", "-m", "torch.distributed.run", ENTRY, RUN_DIR]
#: What an elastic PyTorchJob's containers set for torchrun: each re-formed group's processes meet
#: on a store of their own, not the rendezvous' store every round shares (torch 2.13
#: elastic/rendezvous/dynamic_rendezvous.py `use_agent_store`), where a new rank 1 read the address
#: the previous round's rank 0 left under the same key and gloo's connect was refused.
ELASTIC_ENV = {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}


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


def _by_role(topology: Topology) -> dict[str, list[ReplicaSpec]]:
    out: dict[str, list[ReplicaSpec]] = {}
    for spec in topology.replicas():
        out.setdefault(spec.role, []).append(spec)
    return out


@dataclass(frozen=True)
class ReplicaGroup:
    """One replica spec of the job: the operator's replica type, the role of ours it holds, and
    from which of that role's indices (`offset`: the operator's replica index + offset = ours)."""

    replica_type: str
    role: str
    specs: list[ReplicaSpec]
    offset: int = 0


def replica_groups(topology: Topology, kind: JobKind) -> list[ReplicaGroup]:
    """Our roles as the job's replica specs. A PyTorchJob without a master gets its worker 0 as
    the Master: the operator sets MASTER_ADDR/MASTER_PORT/WORLD_SIZE/RANK only when the job has
    a Master replica (training-operator v1.9.0 pkg/controller.v1/pytorch/envvar.go setPodEnv),
    so without one DDP's env:// rendezvous had nothing to start from. Its RANK 0 and the Workers'
    replica index + 1 are the ranks the workers have locally and on native."""
    by_role = _by_role(topology)
    if kind.kind == "PyTorchJob" and "master" not in by_role and by_role.get("worker"):
        workers = by_role.pop("worker")
        uniform_role_spec("worker", workers)
        groups = [ReplicaGroup("Master", "worker", workers[:1])]
        if workers[1:]:
            groups.append(ReplicaGroup("Worker", "worker", workers[1:], offset=1))
        return groups + [ReplicaGroup(kind.replica_types[r], r, s) for r, s in by_role.items()]
    return [ReplicaGroup(kind.replica_types[role], role, specs) for role, specs in by_role.items()]


def cluster(topology: Topology, base: str, namespace: str) -> tuple[dict[str, list[str]], str]:
    """PX_CLUSTER: each replica's address through the Service the operator creates per replica
    (`<job>-<replica type, lower case>-<index>.<namespace>.svc:<port>`), by our role and index;
    the operator sets the framework's variables, the pods build only PX_CLUSTER."""
    port = KUBERNETES_PORTS[topology.framework]
    out: dict[str, list[str]] = {}
    for group in replica_groups(topology, job_kind(topology.framework, topology.environment.tf_master_type)):
        rt = group.replica_type.lower()
        out.setdefault(group.role, []).extend(
            f"{base}-{rt}-{i}.{namespace}.svc:{port}" for i in range(len(group.specs))
        )
    return out, "px"


def _role_env(
    ctx: RenderContext, role: str, spec: ReplicaSpec, offset: int = 0, elastic: bool = False
) -> list[dict[str, Any]]:
    topology = ctx.topology
    env = {**ELASTIC_ENV, **spec.env} if elastic else dict(spec.env)
    env.update(PX_RUN_ID=ctx.run_id, PX_TASK_TYPE=role, PX_FRAMEWORK=topology.framework or "")
    if offset:
        env["PX_TASK_INDEX_OFFSET"] = str(offset)  # pod/entry.py adds it to PX_TASK_INDEX
    env["PYTHONUNBUFFERED"] = "1"
    if topology.is_mpi:
        env.update(
            PX_MPI_WORLD_SIZE=str(mpi_world_size(topology)),
            PX_MPI_SLOTS=str(topology.environment.processes_per_replica),
        )
        if role == "master":
            # OpenMPI's mpirun refuses to start as root unless told (orterun's root check; the
            # variables since OpenMPI 3.0, 5.x too); most framework images run as root. An image
            # that does not is unaffected.
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    items = env_list(env, ctx)
    items.append(
        {"name": "PX_TASK_INDEX", "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{REPLICA_INDEX_LABEL}']"}}}
    )
    return items


def elastic_policy(ctx: RenderContext, port: int) -> dict[str, Any]:
    """An elastic PyTorchJob's `elasticPolicy` (training-operator v1.9.0
    pkg/apis/kubeflow.org/v1/pytorch_types.go ElasticPolicy; the PET_* variables it becomes:
    pkg/controller.v1/pytorch/elastic.go). Every replica, the master too, runs torchrun's agent
    (`TORCHRUN`), and the rendezvous counts them all: at least the master and `min_workers`, at
    most the master and every worker (`PET_NNODES=MIN:MAX`). The master holds the rendezvous, as
    it does locally (the operator's default host is worker 0). torchrun counts each re-forming of
    the group as a restart, a worker that leaves and one that comes back alike: the allowance is
    two per restart a worker's policy allows it, for each worker."""
    section = ctx.topology.replicas_section
    worker = ctx.topology.replica("worker", 0)
    workers = section.n_workers
    return {
        "rdzvBackend": "c10d",
        "rdzvHost": f"{ctx.base}-master-0",
        "rdzvPort": port,
        "rdzvId": ctx.base,
        "minReplicas": section.n_masters + (section.min_workers or workers),
        "maxReplicas": section.n_masters + workers,
        "maxRestarts": 2 * workers * (worker.max_restarts + 1),
    }


def _elastic_worker_policy(spec: ReplicaSpec) -> None:
    """An elastic worker comes back by its container's restart (`restart_policy`): a failed
    worker of a `Never` spec fails the PyTorchJob (training-operator v1.9.0
    pkg/controller.v1/pytorch/pytorchjob_controller.go UpdateJobStatus), where the run should go on."""
    if spec.restart_policy == "Never":
        raise BackendError(
            "environment.replicas.worker: elastic workers on backend kubeflow come back by restarting "
            "(restart_policy: OnFailure): Kubeflow fails a PyTorchJob whose worker with restart_policy "
            "Never failed, where the run should go on without it; set default_worker.restart_policy: OnFailure"
        )


def _mpirun(ctx: RenderContext) -> list[str]:
    """The launcher's command: every worker slot runs the entry point; our variables go along
    (PX_CLUSTER is built by each rank's entry point from the ConfigMap, mounted on every worker)."""
    topology = ctx.topology
    forwarded = ["PX_RUN_ID", "PX_FRAMEWORK", "PX_MPI_SLOTS", "PX_MPI_WORLD_SIZE", "PYTHONUNBUFFERED"]
    forwarded += sorted(topology.replica("worker", 0).env) if topology.counts().get("worker") else []
    if shared_run_dir(ctx):  # ranks reached over ssh (mpi-operator) have only what -x forwards
        forwarded.append(SHARED_DIR_ENV)
    cmd = ["mpirun", "--hostfile", "/etc/mpi/hostfile", "-np", str(mpi_world_size(topology))]
    for name in forwarded:
        cmd += ["-x", name]
    return [*cmd, "python", ENTRY, RUN_DIR]


def render(ctx: RenderContext) -> list[dict[str, Any]]:
    """ConfigMap (the owner) and the job."""
    topology = ctx.topology
    kind = job_kind(topology.framework, topology.environment.tf_master_type)
    port = KUBERNETES_PORTS[topology.framework]
    groups = replica_groups(topology, kind)
    replica_specs: dict[str, Any] = {}
    backoff = 0
    mpi_operator = kind.kind == "MPIJob" and ctx.settings.mpijob_version == "v2beta1"
    elastic = kind.kind == "PyTorchJob" and topology.replicas_section.elastic
    for group in groups:
        role, specs = group.role, group.specs
        spec = uniform_role_spec(role, specs)
        if mpi_operator and spec.restart_policy not in MPI_OPERATOR_RESTART_POLICIES:
            raise BackendError(
                f"restart_policy {spec.restart_policy} ({role}): mpi-operator's MPIJob (kubeflow.org/v2beta1) "
                "takes Never or OnFailure only, and would never start this job: use one of those"
            )
        if elastic and role == "worker":
            _elastic_worker_policy(spec)
        if spec.restart_policy != "Never":
            backoff = max(backoff, spec.max_restarts + 1)
        cmd = _mpirun(ctx) if topology.is_mpi and role == "master" else TORCHRUN if elastic else None
        env = _role_env(ctx, role, spec, group.offset, elastic)
        main = container(kind.container, spec, ctx, env, None if topology.is_mpi else port, cmd)
        if topology.is_mpi and role != "master":
            # No command: each operator starts its own (training operator v1.9.0 mpijob_controller.go
            # newWorker: `sleep 365d`, the launcher reaches workers with kubectl exec; mpi-operator
            # v0.6.0 mpi_job_controller.go newWorker: `/usr/sbin/sshd -De` with the keys it mounts).
            del main["command"]
        podspec = pod_spec(ctx, spec, [main])
        meta = {"labels": {**ctx.labels(), **replica_pods("kubeflow").pod_labels(role, index_offset=group.offset)}}
        if ctx.settings.annotations:
            meta["annotations"] = dict(ctx.settings.annotations)
        replica_specs[group.replica_type] = {
            "replicas": len(specs),
            "restartPolicy": spec.restart_policy,
            "template": {"metadata": meta, "spec": podspec},
        }
    # backoffLimit: the operator sums the restarts of the job's Running pods (those whose policy
    # restarts) and fails the job once the sum is >= the limit (training-operator v1.9.0
    # pkg/core/job.go PastBackoffLimit; 0: any restart). `max_restarts: N` lets N restarts happen
    # (as locally), so the limit is N + 1; job-wide: the N restarts are the job's, not each replica's.
    # Only where a replica restarts: past the limit the operator deletes every pod of the job, the
    # failed one and its log included, before the job is finished, so cleanPodPolicy does not
    # apply (v1.9.0 pkg/controller.v1/common/job.go ReconcileJobs -> DeletePodsAndServices). Without
    # a limit (upstream's default: nil, `*_defaults.go`) a failed replica of a `Never` spec fails
    # the job through the framework's status (e.g. pkg/controller.v1/pytorch/pytorchjob_controller.go
    # UpdateJobStatus) and its pod stays, Failed, with its log. mpi-operator's launcher is a batch
    # Job whose backoffLimit is this one (v0.6.0 pkg/controller/mpi_job_controller.go
    # newLauncherJob), and a batch Job without one retries 6 times: there it is always set; the Job
    # controller keeps its failed pods.
    run_policy: dict[str, Any] = {"cleanPodPolicy": ctx.settings.clean_pod_policy}
    restarts = any(group.specs[0].restart_policy != "Never" for group in groups)
    if restarts or mpi_operator:
        run_policy["backoffLimit"] = backoff
    if ctx.settings.ttl_seconds_after_finished is not None:
        run_policy["ttlSecondsAfterFinished"] = ctx.settings.ttl_seconds_after_finished
    job_spec: dict[str, Any] = {kind.specs_field: replica_specs, "runPolicy": run_policy}
    if kind.kind == "MXJob":
        job_spec["jobMode"] = "MXTrain"
    elif kind.kind == "MPIJob":
        job_spec["slotsPerWorker"] = topology.environment.processes_per_replica
    elif kind.kind == "PyTorchJob" and (elastic or topology.environment.processes_per_replica > 1):
        # elastic: always said, as torchrun reads it (the operator's default, `auto`, is a process per CPU)
        job_spec["nprocPerNode"] = str(topology.environment.processes_per_replica)
    if elastic:
        job_spec["elasticPolicy"] = elastic_policy(ctx, port)
    api_version = API_VERSION
    if kind.kind == "MPIJob" and ctx.settings.mpijob_version == "v2beta1":
        api_version = MPI_OPERATOR_API_VERSION  # same kind and fields as rendered here; see mpijob_version
    job = {"apiVersion": api_version, "kind": kind.kind, "metadata": ctx.metadata(ctx.base), "spec": job_spec}
    return [configmap(ctx), job]


FLAVOUR = Flavour("kubeflow", render, cluster)
