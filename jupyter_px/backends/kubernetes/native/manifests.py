"""`native`: plain Pods, one headless Service per run, the ConfigMap with the code.

Pods are named `<run>-<role>-<index>` (Kubeflow's names) and get `hostname` + `subdomain`, so
with one headless Service named after the run each pod resolves as
`<run>-<role>-<index>.<run>.<namespace>.svc` (the JobSet / Trainer v2 pattern):
a 1,000-worker run needs one Service, not 1,000. `publishNotReadyAddresses` lets replicas find
each other before any readiness probe passes (rendezvous happens before "ready").

A pod carries only who it is (PX_RUN_ID, PX_TASK_TYPE, PX_TASK_INDEX, PX_FRAMEWORK) and the
replica's own env: the addresses of the others are in the ConfigMap once (`run/cluster.json`),
and `pod/entry.py` builds the whole environment contract (TF_CONFIG, MASTER_ADDR/RANK, DMLC_*,
PX_CLUSTER) from it inside the pod with `cluster.ClusterEnv`, the same code as the local
backend. So a pod's size does not grow with the worker count.
"""

from __future__ import annotations

from typing import Any

from ....cluster import KUBERNETES_PORTS, kubernetes_dns_addresses
from ....topology import Topology
from ...base import BackendError
from ..shared.names import LABEL_RUN, replica_name
from ..shared.podspec import RenderContext, configmap, container, env_list, pod_spec
from ..shared.replica_pods import replica_pods
from ..shared.run_objects import Flavour
from ..shared.security import restrict

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


def cluster(topology: Topology, base: str, namespace: str) -> tuple[dict[str, list[str]], str]:
    """Every replica's address (`<pod>.<run>.<namespace>.svc:<port>`), and that the pods build
    the whole contract from them (`cluster_file.CONTRACTS`)."""
    return kubernetes_dns_addresses(topology, base, namespace, subdomain=base), "full"


def render(ctx: RenderContext) -> list[dict[str, Any]]:
    """ConfigMap (the owner), the headless Service, then one Pod per replica."""
    check(ctx)
    topology, base = ctx.topology, ctx.base
    port = KUBERNETES_PORTS[topology.framework]
    framework = topology.framework or ""
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
        identity = {
            "PX_RUN_ID": ctx.run_id,
            "PX_TASK_TYPE": spec.role,
            "PX_TASK_INDEX": str(spec.index),
            "PX_FRAMEWORK": framework,
            "PYTHONUNBUFFERED": "1",
        }
        env = env_list({**spec.env, **identity}, ctx)
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


FLAVOUR = Flavour("native", render, cluster)
