"""`kubeflow-trainer`: one Kubeflow Trainer v2 `TrainJob` on a training runtime.

A TrainJob says how many nodes, processes per node and resources per node it wants, and names
a runtime (`torch-distributed`; `deepspeed-distributed`, an OpenMPI launcher, for MPI/Horovod)
that owns the rest. So: one image, one environment and the same resources on every node (a
topology whose replicas differ is refused, naming them), and no TensorFlow or MXNet (no runtime).

Our ConfigMap, labels, node selector, tolerations and pull secrets reach the pods through the
TrainJob's field for per-job pod changes, which changed between Trainer releases:
`runtimePatches` (v2.2 and later: a JobSet template patch with a domain-prefixed manager) or
`podTemplateOverrides` (v2.1: labels and a pod spec override per target job). The cluster's CRD
says which it serves (preflight); a field the served version does not have would be pruned
silently by the API server (the ConfigMap never mounted), so the settings' `trainer_version`
picks one and anything it cannot carry is an error. Trainer v2.0's `podSpecOverrides` cannot label
pods, and the run's pods are found by their labels: refused. Nodes are ranked master first, then
workers; `pod/entry.py` maps the node rank back to our role and index, and builds PX_CLUSTER
from the run's ConfigMap (no pod template holds every address).
"""

from __future__ import annotations

import json
from typing import Any

from ....cluster import KUBERNETES_PORTS, mpi_world_size
from ....topology import ReplicaSpec, Topology
from ...base import BackendError
from ..shared.payload import ENTRY, RUN_DIR
from ..shared.podspec import (
    SHARED_DIR_ENV,
    UNIFORM_FIELDS,
    RenderContext,
    command,
    configmap,
    env_list,
    pod_spec,
    resource_requirements,
    shared_run_dir,
    volume_mounts,
)
from ..shared.replica_pods import replica_pods
from ..shared.run_objects import Flavour

API_VERSION = "trainer.kubeflow.org/v1alpha1"
#: Who owns the runtime patch. Trainer's webhook wants a domain-prefixed path here (kubeflow/trainer
#: v2.3.0 pkg/runtime/framework/plugins/jobset/jobset.go Validate: IsDomainPrefixedPath, as for
#: its own SDK's "trainer.kubeflow.org/kubeflow-sdk"); a bare "jupyter-px" made it refuse every TrainJob.
MANAGER = "jupyter-px.io/jupyter-px"
#: The torch runtime's rendezvous port (kubeflow/trainer v2.x pkg/constants ContainerTrainerPort,
#: set by the torch plugin as PET_MASTER_PORT on every node).
TORCH_PORT = 29500
#: What a v2.1 PodTemplateOverride's spec and its containers can carry (kubeflow/trainer v2.1.0
#: pkg/apis/trainer/v1alpha1/trainjob_types.go PodTemplateSpecOverride, ContainerOverride).
V21_POD_FIELDS = frozenset(
    {
        "serviceAccountName",
        "nodeSelector",
        "affinity",
        "tolerations",
        "volumes",
        "initContainers",
        "containers",
        "schedulingGates",
        "imagePullSecrets",
    }
)
V21_CONTAINER_FIELDS = frozenset({"name", "env", "volumeMounts"})


def check(ctx: RenderContext) -> list[ReplicaSpec]:
    """The topology's replicas if a TrainJob can express them; else a clear error."""
    framework = ctx.topology.framework
    if framework not in ("pytorch", "horovod", "mpi"):
        raise BackendError(
            f"Kubeflow Trainer v2 has no runtime for framework {framework or '(none)'}: use backend kubeflow "
            "(TFJob/MXJob) or native"
        )
    specs = ctx.topology.replicas()
    first = specs[0]
    if first.restart_policy != "Never":
        raise BackendError(
            f"restart_policy {first.restart_policy} (max_restarts {first.max_restarts}): a TrainJob cannot set "
            "restarts, its runtime does (the Jobs' backoffLimit and the JobSet's failurePolicy in the "
            "ClusterTrainingRuntime): use restart_policy Never, or backend kubeflow or native"
        )
    differing = [s for s in specs[1:] if any(getattr(s, f) != getattr(first, f) for f in UNIFORM_FIELDS)]
    if differing:
        fields = sorted({f for s in differing for f in UNIFORM_FIELDS if getattr(s, f) != getattr(first, f)})
        keys = ", ".join(s.key for s in differing[:8]) + (", ..." if len(differing) > 8 else "")
        raise BackendError(
            f"{keys} differ from {first.key} in {', '.join(fields)}: a TrainJob gives every node the same "
            "image, environment and resources; use backend kubeflow or native, or give every replica the same settings"
        )
    return specs


def node_addresses(topology: Topology, base: str, namespace: str, nodes: int) -> list[str]:
    """JobSet pod DNS: `<job>-node-0-<i>.<job>.<namespace>.svc` (the JobSet's headless Service),
    on the torch runtime's port for PyTorch."""
    port = TORCH_PORT if topology.framework == "pytorch" else KUBERNETES_PORTS[topology.framework]
    return [f"{base}-node-0-{i}.{base}.{namespace}.svc:{port}" for i in range(nodes)]


def mpi_nodes(topology: Topology) -> int:
    """The TrainJob's numNodes for MPI: one host per worker. The MPI runtime runs its launcher as
    one of the nodes (deepspeed-distributed: runLauncherAsNode, kubeflow/trainer v2.1.0-v2.3.0
    pkg/runtime/framework/plugins/mpi/mpi.go EnforceMLPolicy: `node` pods = numNodes - 1, at least
    1, and the launcher in the hostfile), so numNodes = workers: every pod of the TrainJob, the
    launcher included, hosts ranks (master + workers would leave a host, and its GPUs, idle)."""
    return max(topology.counts().get("worker", 0), 1)


def cluster(topology: Topology, base: str, namespace: str) -> tuple[dict[str, list[str]], str]:
    """Our replicas' nodes in rank order (master first); the runtime sets the framework's
    variables, the pods build only PX_CLUSTER. MPI: the master is the launcher, the workers the
    hosts in the hostfile's order (the runtime's: its `node` pods, then the launcher)."""
    counts = topology.counts()
    if topology.is_mpi:
        port = KUBERNETES_PORTS[topology.framework]
        launcher = f"{base}-launcher-0-0.{base}.{namespace}.svc:{port}"
        nodes = mpi_nodes(topology)
        hosts = node_addresses(topology, base, namespace, max(nodes - 1, 1)) + [launcher]
        return {"master": [launcher], "worker": hosts[: counts.get("worker", 0)]}, "px"
    addresses = node_addresses(topology, base, namespace, sum(counts.values()))
    out: dict[str, list[str]] = {}
    at = 0
    for role, count in counts.items():
        out[role] = addresses[at : at + count]
        at += count
    return out, "px"


def mpirun(ctx: RenderContext, env: dict[str, str]) -> list[str]:
    """The launcher's command: exactly the topology's ranks (`-np`: the runtime's hostfile may
    hold more slots than that, e.g. its one `node` pod of a 1-worker job besides the launcher),
    and every variable the ranks need forwarded (`-x`): ranks on the other nodes are started
    through ssh, whose sessions do not have the node container's environment."""
    names = ["PX_RUN_ID", "PX_FRAMEWORK", "PX_MPI_SLOTS", "PX_MPI_WORLD_SIZE", "PYTHONUNBUFFERED"]
    names += sorted(set(env) - set(names) - {"PX_NODE_ROLES"})
    if shared_run_dir(ctx):
        names.append(SHARED_DIR_ENV)
    forwarded = [x for name in names for x in ("-x", name)]
    ranks = str(mpi_world_size(ctx.topology))
    return ["mpirun", "--hostfile", "/etc/mpi/hostfile", "-np", ranks, *forwarded, "python", ENTRY, RUN_DIR]


def render(ctx: RenderContext) -> list[dict[str, Any]]:
    specs = check(ctx)
    topology = ctx.topology
    spec = specs[0]
    counts = topology.counts()
    mpi = topology.is_mpi
    nodes = mpi_nodes(topology) if mpi else sum(counts.values())
    env = dict(spec.env)
    env.update(
        PX_RUN_ID=ctx.run_id,
        PX_FRAMEWORK=topology.framework or "",
        PX_NODE_ROLES=json.dumps([[r, n] for r, n in counts.items()], separators=(",", ":")),
        PYTHONUNBUFFERED="1",
    )
    cmd = command()
    if mpi:
        env.update(
            PX_MPI_SLOTS=str(topology.environment.processes_per_replica),
            PX_MPI_WORLD_SIZE=str(mpi_world_size(topology)),
        )
        cmd = mpirun(ctx, env)
    trainer: dict[str, Any] = {
        "image": ctx.settings.image_for(topology.framework, spec.image, spec.resources.gpus() > 0),
        "command": cmd,
        "env": env_list(env, ctx),
        "numNodes": nodes,
        "numProcPerNode": topology.environment.processes_per_replica,
    }
    requirements = resource_requirements(spec.resources, ctx.settings.gpu_resource)
    if requirements:
        trainer["resourcesPerNode"] = requirements
    pod = pod_spec(ctx, spec, [{"name": "node", "volumeMounts": volume_mounts(ctx)}])
    pod_meta = {"labels": {**ctx.labels(), **replica_pods("kubeflow-trainer").pod_labels("node")}}
    jobs = ["launcher", "node"] if mpi else ["node"]
    runtime = ctx.settings.trainer_mpi_runtime if mpi else ctx.settings.trainer_runtime
    job_spec: dict[str, Any] = {
        "runtimeRef": {"name": runtime, "apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime"},
        "trainer": trainer,
    }
    image = trainer["image"] if mpi else None
    job_spec.update(pod_changes(ctx.settings.trainer_version, jobs, pod_meta, pod, image))
    train_job = {"apiVersion": API_VERSION, "kind": "TrainJob", "metadata": ctx.metadata(ctx.base), "spec": job_spec}
    return [configmap(ctx), train_job]


def pod_changes(
    version: str, jobs: list[str], meta: dict[str, Any], pod: dict[str, Any], node_image: str | None = None
) -> dict[str, Any]:
    """The TrainJob field that carries our pod changes on that Trainer release ("auto": the newest).
    `node_image`: the image of the MPI runtime's `node` pods, which run ranks of the code too
    (the trainer's image goes only to the launcher, kubeflow/trainer v2.3.0
    pkg/runtime/framework/plugins/jobset/builder.go Trainer); a v2.1 override cannot carry one,
    so there the nodes keep the runtime's image."""
    if version == "v2.0":
        raise BackendError(
            "Kubeflow Trainer v2.0 cannot label a TrainJob's pods (podSpecOverrides has no metadata), and "
            "jupyter-px follows a run's pods by their labels: upgrade Kubeflow Trainer to v2.1 or later, or use "
            "backend kubeflow or native"
        )
    if version == "v2.1":
        cannot = sorted(set(pod) - V21_POD_FIELDS) + sorted(
            f"containers[{c['name']}].{f}" for c in pod.get("containers") or [] for f in set(c) - V21_CONTAINER_FIELDS
        )
        if cannot:
            raise BackendError(
                f"Kubeflow Trainer v2.1's podTemplateOverrides cannot carry {', '.join(cannot)}: upgrade Kubeflow "
                "Trainer to v2.2 or later, or leave those settings out"
            )
        override = {"targetJobs": [{"name": job} for job in jobs], "metadata": meta, "spec": pod}
        return {"podTemplateOverrides": [override]}

    def _pod(job: str) -> dict[str, Any]:
        if job != "node" or node_image is None:
            return pod
        containers = [{**c, "image": node_image} if c.get("name") == "node" else c for c in pod["containers"]]
        return {**pod, "containers": containers}

    patch = {
        "manager": MANAGER,
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {"name": job, "template": {"spec": {"template": {"metadata": meta, "spec": _pod(job)}}}}
                        for job in jobs
                    ]
                }
            }
        },
    }
    return {"runtimePatches": [patch]}


FLAVOUR = Flavour("kubeflow-trainer", render, cluster)
