"""Create a run's objects all or nothing, with bounded parallel API calls.

The ConfigMap goes first and becomes the `ownerReference` of every other object, so deleting it
(or `stop`, which deletes by label) removes the whole run. The rest is created by a pool of
`parallelism` threads: a 1,000-pod run is bounded by the API server, not by one round trip at a
time. If any create fails, nothing new is started, what was created is deleted, and the error
carries the API server's reason for the first failure.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from ..base import BackendError
from .client import Cluster, api_reason
from .names import LABEL_RUN
from .resources import kind_of

log = logging.getLogger(__name__)


class CreateFailed(BackendError):
    """Creating the run's objects failed; whatever had been created was deleted again."""


def _describe(obj: dict[str, Any]) -> str:
    return f"{obj['kind']} {obj['metadata']['name']}"


def owner_reference(owner: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": owner.get("apiVersion", "v1"),
        "kind": owner.get("kind", "ConfigMap"),
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }


def delete_objects(cluster: Cluster, objects: list[dict[str, Any]], parallelism: int = 16) -> list[str]:
    """Delete the given objects (already-gone ones are fine); the failures, described."""
    problems: list[str] = []

    def delete(obj: dict[str, Any]) -> None:
        try:
            kind_of(obj).delete(cluster, obj["metadata"]["name"])
        except ApiException as error:
            if error.status != 404:
                problems.append(f"{_describe(obj)}: {api_reason(error)}")
        except (HTTPError, OSError) as error:
            problems.append(f"{_describe(obj)}: {error}")

    owners = [o for o in objects if o["kind"] == "ConfigMap"]
    rest = [o for o in objects if o["kind"] != "ConfigMap"]
    with ThreadPoolExecutor(max_workers=max(1, parallelism)) as pool:
        list(pool.map(delete, rest))
    for obj in owners:  # last: while it exists, the API server's garbage collector can also clean up
        delete(obj)
    return problems


def create_all(cluster: Cluster, objects: list[dict[str, Any]], parallelism: int = 16) -> list[dict[str, Any]]:
    """Create `objects` (the owner ConfigMap first); the created objects as the API returned them."""
    if not objects or objects[0]["kind"] != "ConfigMap":
        raise ValueError("the first object of a run must be its ConfigMap (the owner)")
    owner_body, rest = objects[0], objects[1:]
    try:
        owner = kind_of(owner_body).create(cluster, owner_body)
    except ApiException as error:
        raise CreateFailed(f"creating {_describe(owner_body)} failed: {api_reason(error)}") from None
    except (HTTPError, OSError) as error:
        raise CreateFailed(f"creating {_describe(owner_body)} failed: {error}") from None
    reference = owner_reference(owner)
    created: list[dict[str, Any]] = [owner]
    lock = threading.Lock()
    stop = threading.Event()

    def create(body: dict[str, Any]) -> None:
        if stop.is_set():
            return
        body = {**body, "metadata": {**body["metadata"], "ownerReferences": [reference]}}
        result = kind_of(body).create(cluster, body)
        with lock:
            created.append(result)

    failure: BaseException | None = None
    failed_obj: dict[str, Any] | None = None
    with ThreadPoolExecutor(max_workers=max(1, parallelism), thread_name_prefix="px-k8s-create") as pool:
        futures = {pool.submit(create, body): body for body in rest}
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for future in done:
            if future.exception() is not None:
                failure, failed_obj = future.exception(), futures[future]
                break
        if failure is not None:
            stop.set()
            for future in futures:
                future.cancel()
    if failure is None:
        return created
    reason = api_reason(failure) if isinstance(failure, ApiException) else str(failure)
    log.info(
        "creating %s failed (%s); deleting the %d objects created", _describe(failed_obj or {}), reason, len(created)
    )
    problems = delete_objects(cluster, created, parallelism)
    message = (
        f"creating {_describe(failed_obj or owner_body)} failed: {reason}; nothing of the run was left on the cluster"
    )
    if problems:
        message = (
            f"creating {_describe(failed_obj or owner_body)} failed: {reason}; deleting what had been created "
            f"failed too for {'; '.join(problems[:3])} (delete them with kubectl delete all,configmaps "
            f"-l {LABEL_RUN}={owner['metadata']['labels'].get(LABEL_RUN)})"
        )
    raise CreateFailed(message)
