"""Create a run's objects all or nothing, with bounded parallel API calls.

The ConfigMap goes first and becomes the `ownerReference` of every other object, so deleting it
(or `stop`, which deletes by label) removes the whole run. The rest is created by a pool of
`parallelism` threads: a 1,000-pod run is bounded by the API server, not by one round trip at a
time. If any create fails, nothing new is started, what was created is deleted (by name, then
by the run's label: a create whose answer was lost made an object no answer named), that
nothing is left is confirmed by listing, and the error carries the API server's reason for the
first failure and whether the rollback was confirmed.

Before any rollback, a create that failed for a reason that passes (429 Too Many Requests, a
5xx, a reset or refused connection) is tried again, `CREATE_ATTEMPTS` times at most, after the
server's `Retry-After` when it gives one (at most `RETRY_AFTER_MAX_S`), else a doubling back-off:
a busy API server slows a 1,000-pod start down instead of failing it. A request that timed out
is not tried again: the timeout already bounded how long a hung server is waited for, and six of
them would keep a submit waiting for minutes. A retried create whose
first answer was lost may find its object made (409 AlreadyExists): the object is read back and
counted as created when it carries this run's label.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError
from urllib3.exceptions import TimeoutError as RequestTimedOut

from ...base import BackendError
from .client import Cluster, api_reason
from .names import LABEL_RUN, run_selector
from .resources import KINDS, kind_of

log = logging.getLogger(__name__)

#: Tries of one create whose failure passes (429, 5xx, a reset connection), and the waits between.
CREATE_ATTEMPTS = 6
BACKOFF_START_S = 0.5
BACKOFF_MAX_S = 8.0
RETRY_AFTER_MAX_S = 30.0
TRANSIENT_STATUSES = (429, 500, 502, 503, 504)


def retry_after(error: BaseException) -> float | None:
    """The wait an API server asked for with `Retry-After` on a 429/503 (capped), else None: the
    caller's own backoff then. Preflight's calls honour it as the create's do."""
    headers = getattr(error, "headers", None) or {}
    try:
        value = headers.get("Retry-After") if hasattr(headers, "get") else None
        return min(RETRY_AFTER_MAX_S, float(value)) if value is not None else None
    except (TypeError, ValueError):
        return None


def _transient(error: BaseException) -> bool:
    if isinstance(error, ApiException):
        return error.status in TRANSIENT_STATUSES or error.status in (0, None)
    return isinstance(error, (HTTPError, OSError))


def create_with_retries(cluster: Cluster, body: dict[str, Any], stop: threading.Event | None = None) -> dict[str, Any]:
    """Create `body`, trying again after failures that pass (see the module doc)."""
    kind = kind_of(body)
    retried = False
    for attempt in range(CREATE_ATTEMPTS):
        try:
            return kind.create(cluster, body)
        except ApiException as error:
            if error.status == 409 and retried:  # made by an attempt whose answer was lost?
                found = kind.get(cluster, body["metadata"]["name"])
                labels = found.get("metadata", {}).get("labels") or {}
                if labels.get(LABEL_RUN) == (body["metadata"].get("labels") or {}).get(LABEL_RUN):
                    return found
            if not _transient(error) or attempt == CREATE_ATTEMPTS - 1:
                raise
            wait = retry_after(error)
        except (HTTPError, OSError) as error:
            if isinstance(error, RequestTimedOut) or attempt == CREATE_ATTEMPTS - 1:
                raise
            wait = None
        retried = True
        wait = wait if wait is not None else min(BACKOFF_MAX_S, BACKOFF_START_S * 2**attempt)
        log.info("creating %s: the API server is busy or unreachable; again in %.1f s", _describe(body), wait)
        if stop is not None and stop.wait(wait):
            raise CreateFailed(f"creating {_describe(body)} was abandoned: another create of the run failed")
        if stop is None:
            time.sleep(wait)
    raise AssertionError("unreachable")


class CreateFailed(BackendError):
    """Creating the run's objects failed. `left_behind`: rolling back could not be confirmed
    (some may remain on the cluster, under the run's label); otherwise none remain."""

    def __init__(self, message: str, *, left_behind: bool = False):
        super().__init__(message)
        self.left_behind = left_behind


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
    """Create `objects` (the owner ConfigMap first); the created objects as the API returned them.

    On a failure everything is rolled back (`roll_back`), including objects whose create
    succeeded on the server while its answer was lost; CreateFailed says whether that was
    confirmed (`left_behind`)."""
    if not objects or objects[0]["kind"] != "ConfigMap":
        raise ValueError("the first object of a run must be its ConfigMap (the owner)")
    owner_body, rest = objects[0], objects[1:]
    try:
        owner = create_with_retries(cluster, owner_body)
    except (ApiException, HTTPError, OSError) as error:
        reason = api_reason(error) if isinstance(error, ApiException) else str(error)
        raise _rolled_back(cluster, objects, [], owner_body, reason, parallelism) from None
    reference = owner_reference(owner)
    created: list[dict[str, Any]] = [owner]
    lock = threading.Lock()
    stop = threading.Event()

    def create(body: dict[str, Any]) -> None:
        if stop.is_set():
            return
        body = {**body, "metadata": {**body["metadata"], "ownerReferences": [reference]}}
        result = create_with_retries(cluster, body, stop)
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
    raise _rolled_back(cluster, objects, created, failed_obj or owner_body, reason, parallelism)


def _selector_of(objects: list[dict[str, Any]]) -> str:
    """The label selector of the run these objects belong to (every object carries the label)."""
    return run_selector(objects[0]["metadata"]["labels"][LABEL_RUN])


def roll_back(
    cluster: Cluster, objects: list[dict[str, Any]], created: list[dict[str, Any]], parallelism: int = 16
) -> list[str]:
    """Delete a run's objects after a failed create, and confirm none is left; what is left (or
    could not be checked), described: empty when the rollback is confirmed.

    By name for what the API answered, then by the run's label for every kind the run has: a
    create whose answer was lost (a timeout, a reset connection, a proxy's 504) may still have
    made its object, whose name no answer returned. Confirmed by listing each kind by label."""
    selector = _selector_of(objects)
    kinds = [kind for kind in dict.fromkeys(obj["kind"] for obj in objects) if kind != "ConfigMap"] + ["ConfigMap"]
    problems = delete_objects(cluster, created, parallelism)
    for kind in kinds:  # the owner last, as in delete_objects
        try:
            KINDS[kind].delete_by_label(cluster, selector)
        except ApiException as error:
            if error.status != 404:
                problems.append(f"{kind} -l {selector}: {api_reason(error)}")
        except (HTTPError, OSError) as error:
            problems.append(f"{kind} -l {selector}: {error}")
    left: list[str] = []
    for kind in kinds:
        try:
            names = KINDS[kind].names_by_label(cluster, selector)
        except ApiException as error:
            if error.status == 404:
                continue
            left.append(f"{kind}s could not be listed ({api_reason(error)})")
            continue
        except (HTTPError, OSError) as error:
            left.append(f"{kind}s could not be listed ({error})")
            continue
        left += [f"{kind} {name}" for name in names]
    return (problems + left) if left else []


def _rolled_back(
    cluster: Cluster,
    objects: list[dict[str, Any]],
    created: list[dict[str, Any]],
    failed_obj: dict[str, Any],
    reason: str,
    parallelism: int,
) -> CreateFailed:
    """Roll back after `failed_obj` failed with `reason`; the error to raise, saying how it went."""
    log.info("creating %s failed (%s); rolling back the run's objects", _describe(failed_obj), reason)
    problems = roll_back(cluster, objects, created, parallelism)
    what = f"creating {_describe(failed_obj)} failed: {reason}"
    if not problems:
        return CreateFailed(f"{what}; nothing of the run was left on the cluster")
    return CreateFailed(
        f"{what}; deleting what may have been created could not be confirmed: {'; '.join(problems[:3])} "
        f"(delete them with kubectl delete all,configmaps -l {_selector_of(objects)})",
        left_behind=True,
    )
