"""Deleting what a run has on the cluster: its job by name, its pods, Services and ConfigMaps by
the run's label (what the operators made for the job, its pods and Services, JobSet, goes with
the job: they name it as their owner). `stop` and the follower (a stop, a native run's end) call
`delete_run`; `remove_run` also says what there was (a finished run's `clean`)."""

from __future__ import annotations

from kubernetes.client.exceptions import ApiException

from ...base import BackendError
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


def _plural(count: int, kind: str) -> str:
    return f"{count} {kind}{'' if count == 1 else 's'}"


def remove_run(cluster: Cluster, handle: RunHandle) -> list[str]:
    """Delete every object of a run and say what there was: the job (with what its operator made
    for it) and the run's pods, Services and ConfigMaps, one entry per kind."""
    selector = run_selector(handle.base)
    found: list[str] = []
    job = handle.job()
    if job is not None:
        try:
            job.get(cluster, handle.base)
            found.append(f"{job.kind} {handle.base} (and what its operator made for it)")
        except ApiException as error:
            if error.status != 404:
                raise BackendError(f"reading {job.kind} {handle.base}: {api_reason(error)}") from None
    for kind in ("Pod", "Service", "ConfigMap"):
        names = KINDS[kind].names_by_label(cluster, selector)
        if names:
            found.append(_plural(len(names), kind))
    delete_run(cluster, handle)
    return found
