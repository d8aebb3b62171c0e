"""Whether a failed attempt of a run is started again as a whole (`termination.max_retries`):
the one rule the local supervisor (`local/attempts.py`) and the native Kubernetes follower
(`kubernetes/follower/gang_restart.py`) apply, so a run is retried the same way on both.

A rank killed by a signal usually takes its peers down with it (gloo and NCCL raise in the
collective: exit 1), and their ends may be seen together with its own; so the attempt is retried
when any failure seen is retryable (`Termination.retries`), and that one is named its culprit.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from ..runstore import ReplicaStatus
from ..runstore.models import AttemptRecord
from ..topology.termination import Termination


def judge(
    termination: Termination, failed: Sequence[ReplicaStatus], attempt: int, max_attempts: int
) -> tuple[ReplicaStatus, str | None]:
    """The replica whose failure ends the attempt (a retryable one first, else the first to
    fail), and why the run is not started again (None: it is). `failed` is not empty."""
    retryable = [r for r in failed if termination.retries(r.exit_code)]
    culprit = (retryable or sorted(failed, key=lambda r: r.finished_at or 0))[0]
    if not retryable:
        return culprit, (
            f"not retried: exit code {culprit.exit_code} of {culprit.key} is permanent ({termination.rule()})"
        )
    if attempt >= max_attempts:
        return culprit, (
            f"out of retries: attempt {attempt} of {max_attempts} failed "
            f"(termination.max_retries: {termination.max_retries})"
        )
    return culprit, None


def record_failure(record: AttemptRecord, culprit: ReplicaStatus, step: int | None) -> None:
    """What ended the attempt `record`: which replica, why, at which step."""
    record.finished_at, record.failed, record.reason = time.time(), culprit.key, culprit.reason
    record.exit_code, record.signal, record.message = culprit.exit_code, culprit.signal, culprit.message
    record.step = step
