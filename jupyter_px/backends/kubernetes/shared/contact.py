"""Whether the follower can still reach the API server, and for how long it could not.

A follower that retries forever against an API server that is gone (a deleted kind cluster, a
laptop that left the VPN, a test's fake server that stopped) is a process nobody will ever end.
So the follower gives up after `follower_give_up_s` (`PX_K8S_FOLLOWER_GIVE_UP_S`) without an
answer. Only the absence of an answer counts: a refused connection, a timeout, a reset. Any HTTP
answer, a 500 or a 503 included, means the server is there and the follower keeps going (those
are blips the next call usually does not see). Giving up does not decide the run: the cluster may
still be running it, and the next look at the run starts a follower again.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

#: The API server answers but refuses (401: credentials expired or revoked; 403: no permission to
#: watch pods or read logs) for this long: the follow ends with that reason, never an endless
#: Pending. Short, since a refusal does not fix itself; not zero, since a token may be refreshed.
REFUSED_GIVE_UP_S = float(os.environ.get("PX_K8S_REFUSED_GIVE_UP_S") or 20.0)
UNAUTHORIZED, FORBIDDEN = "Unauthorized", "Forbidden"


def is_unreachable(error: BaseException) -> bool:
    """True for errors that mean no answer came (refused, timed out, reset); False for an answer."""
    if isinstance(error, ApiException):
        return error.status in (0, None)  # the client's ApiException without an HTTP status
    return isinstance(error, (HTTPError, OSError))


class Contact:
    """Since when the API server has not answered (thread-safe: the watch, the job poll and the
    main loop share one)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._since: float | None = None
        self.last_error: str | None = None

    def answered(self) -> None:
        with self._lock:
            self._since = None
            self.last_error = None

    def failed(self, error: BaseException) -> None:
        """Record a failed call; an HTTP answer (ApiException with a status) counts as contact."""
        if not is_unreachable(error):
            self.answered()
            return
        with self._lock:
            if self._since is None:
                self._since = self._clock()
            self.last_error = _describe(error)

    @property
    def reachable(self) -> bool:
        with self._lock:
            return self._since is None

    def unreachable_for(self) -> float:
        """Seconds since the first unanswered call after the last answer (0 while in contact)."""
        with self._lock:
            return 0.0 if self._since is None else self._clock() - self._since


def _describe(error: BaseException) -> str:
    reason = getattr(error, "reason", None)  # urllib3's MaxRetryError: the underlying error
    text = str(reason or error)
    return text if len(text) <= 200 else text[:197] + "..."


def refusal(found: list[tuple[ApiException, float, str]], host: str, namespace: str) -> tuple[str, str] | None:
    """(reason, message) of the first refusal among `found` ((the error, since when, what was
    refused)) that has lasted `REFUSED_GIVE_UP_S`; None when none has."""
    from .client import api_reason

    for error, since, what in found:
        if time.monotonic() - since < REFUSED_GIVE_UP_S:
            continue
        if error.status == 401:
            return UNAUTHORIZED, (
                f"the Kubernetes API at {host} no longer accepts this follower's credentials "
                f"({api_reason(error)}): they may have expired. Log in again (refresh the kubeconfig); a keeper "
                "(the Jupyter server's, Run.wait(), jupyter px follow) then follows the run again"
            )
        return FORBIDDEN, (
            f"no permission to {what} in namespace {namespace} ({api_reason(error)}); "
            "the follower needs get, list and watch on pods and get on pods/log"
        )
    return None


def lost_contact(host: str, lost_for: float, last_error: str | None) -> str:
    """What a run says when its follower stops, the API server silent for `lost_for` seconds."""
    return (
        f"lost contact with the Kubernetes API at {host} for {lost_for:.0f} s ({last_error}); the run may "
        "still be running on the cluster. A keeper (the Jupyter server's, Run.wait(), jupyter px follow) "
        "starts following it again"
    )
