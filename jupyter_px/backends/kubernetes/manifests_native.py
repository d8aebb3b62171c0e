"""`native`: plain Pods, one headless Service per run, the ConfigMap with the code.

Pods are named `<run>-<role>-<index>` (Kubeflow's names) and get `hostname` + `subdomain`, so
with one headless Service named after the run each pod resolves as
`<run>-<role>-<index>.<run>.<namespace>.svc` (the JobSet / Trainer v2 pattern):
a 1,000-worker run needs one Service, not 1,000. `publishNotReadyAddresses` lets replicas find
each other before any readiness probe passes (rendezvous happens before "ready").

Every pod gets the whole environment contract (TF_CONFIG, MASTER_ADDR/RANK, DMLC_*), computed
here per replica from `cluster.ClusterEnv`, the same code as the local backend.
"""

from __future__ import annotations

from typing import Any

from ...cluster import KUBERNETES_PORTS, ClusterEnv, kubernetes_dns_addresses
from ..base import BackendError
from .names import LABEL_RUN, replica_name
from .podspec import RenderContext, configmap, container, env_list, pod_spec
from .replica_pods import replica_pods
from .security import restrict

#: Restart policies a bare Pod has (ExitCode is a Kubeflow job policy).
_POD_RESTART = {"Never": "Never", "OnFailure": "OnFailure", "Always": "Always"}


def check(ctx: RenderContext) -> None:
    topology = ctx.topology
    if topology.is_mpi:
        raise BackendError(
            f"framework {topology.framework} needs an MPI launcher that reaches its workers over ssh, which plain "
            "pods do not set up: use backend kubeflow (MPIJob) or kubeflow-trainer (deepspeed-distributed)"
        )
    for spec in topology.replicas():
        if spec.restart_policy not in _POD_RESTART:
            raise BackendError(
                f"{spec.key}: restart_policy {spec.restart_policy!r} is a Kubeflow job policy; on backend native "
                "use Never, OnFailure or Always (or use backend kubeflow)"
            )


def render(ctx: RenderContext) -> list[dict[str, Any]]:
    """ConfigMap (the owner), the headless Service, then one Pod per replica."""
    check(ctx)
    topology, base = ctx.topology, ctx.base
    port = KUBERNETES_PORTS[topology.framework]
    addresses = kubernetes_dns_addresses(topology, base, ctx.namespace, subdomain=base)
    cluster_env = ClusterEnv(topology, ctx.run_id, addresses)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": ctx.metadata(base),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {LABEL_RUN: base},
            "ports": [{"name": "px", "port": port, "targetPort": port}],
        },
    }
    objects: list[dict[str, Any]] = [configmap(ctx), service]
    for spec in topology.replicas():
        name = replica_name(base, spec.role, spec.index)
        env = env_list(cluster_env.for_replica(spec.role, spec.index), ctx)
        podspec = pod_spec(ctx, spec, [container("replica", spec, ctx, env, port)])
        # max_restarts 0: no restart, as locally (the kubelet would restart an OnFailure pod forever)
        policy = "Never" if spec.max_restarts == 0 else _POD_RESTART[spec.restart_policy]
        podspec.update(hostname=name, subdomain=base, restartPolicy=policy)
        restrict(podspec, ctx.settings)
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": ctx.metadata(name, replica_pods("native").pod_labels(spec.role, spec.index)),
                "spec": podspec,
            }
        )
    return objects
