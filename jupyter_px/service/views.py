"""The one JSON shape of a run: `jupyter px runs --json`, `%px_runs -o`, and the REST API.

The JupyterLab sidebar (next) is to consume this shape, so it changes only by adding fields. A summary is
cheap (record + status, no log or metric reads) because the runs list polls it for every run;
the detail adds what one run's page shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..runstore import ReplicaStatus, RunRecord, RunStatus
from ..topology import TopologyError, parse_topology
from ..topology.naming import ReplicaNames


def run_summary(record: RunRecord, status: RunStatus, owner_problem: str | None = None) -> dict[str, Any]:
    """What a runs list shows for one run. `owner_problem`: what a read found wrong with the
    run's lifecycle owner ("the supervisor (pid 123) is gone"), None when nothing is."""
    return {
        "run_id": record.run_id,
        "name": record.name,
        "state": status.state.value,
        "finished": status.state.finished,
        "reason": status.reason,
        "message": status.message,
        "backend": record.backend,
        "framework": (record.topology or {}).get("framework"),
        "submitted_from": record.submitted_from,
        "user": record.user,
        "created_at": record.created_at,
        "started_at": status.started_at,
        "finished_at": status.finished_at,
        "updated_at": status.updated_at,
        "replicas_total": len(status.replicas),
        "replica_counts": status.counts(),
        "owner_problem": owner_problem,
        "launch": status.launch,
    }


def replica_json(replica: ReplicaStatus, names: ReplicaNames | None = None) -> dict[str, Any]:
    """One replica's row: what a replica table shows. `key` is the store's (`master-0`), `label`
    what the job calls it (`chief` for a TensorFlow master: `topology.naming`)."""
    return {
        "key": replica.key,
        "label": (names or ReplicaNames()).label(replica.role, replica.index),
        "role": replica.role,
        "index": replica.index,
        "state": replica.state.value,
        "exit_code": replica.exit_code,
        "signal": replica.signal,
        "restarts": replica.restarts,
        "reason": replica.reason,
        "message": replica.message,
        "started_at": replica.started_at,
        "finished_at": replica.finished_at,
        "address": replica.address,
        "failure": replica.failure.model_dump(mode="json") if replica.failure else None,
        "stalled_since": replica.stalled_since,
        "stall_after_s": replica.stall_after_s,
    }


def run_detail(record: RunRecord, status: RunStatus, owner_problem: str | None = None) -> dict[str, Any]:
    """One run in full: the summary, every replica, the topology and how the code runs."""
    return {
        **run_summary(record, status, owner_problem),
        "replicas": [replica_json(replica, ReplicaNames.of(record.topology)) for replica in status.replicas],
        "topology": record.topology,
        "code": record.code.model_dump(mode="json"),
        "workdir": record.workdir,
        "host": record.host,
        "attempt": status.attempt,
        "max_attempts": status.max_attempts,
        "attempts": [attempt.model_dump(mode="json") for attempt in status.attempts],
        "checkpoints": [checkpoint.model_dump(mode="json") for checkpoint in status.checkpoints],
    }


@dataclass(frozen=True)
class RunView:
    """One run as a read sees it: what was submitted, its stored status, and what is wrong with
    its owner (None when nothing is, or the run has finished)."""

    record: RunRecord
    status: RunStatus
    owner_problem: str | None = None


def run_replicas(record: RunRecord, status: RunStatus | None = None) -> list[tuple[str, int]]:
    """The run's replicas as (role, index): the one answer to "which replicas does this run have".

    The topology's, in start order (a run has them all from the moment it is submitted, before
    any backend wrote a status); then any the status names that the topology does not (a record
    from another version whose topology this one cannot read)."""
    replicas: list[tuple[str, int]] = []
    try:
        replicas = [(spec.role, spec.index) for spec in parse_topology(record.topology).replicas()]
    except TopologyError:
        pass
    known = set(replicas)
    for replica in status.replicas if status is not None else []:
        if (replica.role, replica.index) not in known:
            replicas.append((replica.role, replica.index))
            known.add((replica.role, replica.index))
    return replicas
