"""Deleting what a run has on the cluster: its job by name, its pods, Services and ConfigMaps by
the run's label. `stop` and the follower (a stop, a native run's end) both call it."""

from __future__ import annotations

from kubernetes.client.exceptions import ApiException

from ..base import BackendError
from .client import Cluster, api_reason
from .create import delete_objects
from .handle import RunHandle
from .names import run_selector
from .resources import KINDS


def delete_run(cluster: Cluster, handle: RunHandle) -> None:
    """Delete every object of a run: by label (pods, services, configmaps) and the job by name."""
    selector = run_selector(handle.base)
    problems = []
    if handle.job_kind:
        job = {"kind": handle.job_kind, "apiVersion": handle.job_api_version, "metadata": {"name": handle.base}}
        problems += delete_objects(cluster, [job])
    for kind in ("Pod", "Service", "ConfigMap"):
        try:
            KINDS[kind].delete_by_label(cluster, selector)
        except ApiException as error:
            if error.status != 404:
                problems.append(f"{kind}: {api_reason(error)}")
    if problems:
        raise BackendError(f"stopping run {handle.base} left objects behind: {'; '.join(problems)}")
