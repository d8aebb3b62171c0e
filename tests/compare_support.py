"""Runs for comparison tests, written through the run store's own writer (`RunStore.create`,
`write_status`) plus metrics and params files in the tracking format (`tracking.lines.json_line`'s
shape): what a finished run leaves, without starting one."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from jupyter_px.runstore import ReplicaStatus, RunRecord, RunStatus, RunStore


def make_run(
    store: RunStore,
    run_id: str,
    *,
    name: str | None = None,
    curves: Mapping[str, Callable[[int], float]] | None = None,
    steps: int = 100,
    params: Mapping[str, Any] | None = None,
    workers: int = 1,
    state: str = "Succeeded",
    worker_curves: Mapping[str, Callable[[int], float]] | None = None,
) -> Path:
    """A finished run: the master logs `curves` (metric -> value of step) for `steps` steps and
    `params`; workers log `worker_curves` (default: nothing)."""
    topology = {"framework": "pytorch", "environment": {"replicas": {"n_workers": workers}}}
    paths = store.create(RunRecord(run_id=run_id, name=name, topology=topology), {"main.py": "pass\n"})
    now = time.time()
    replicas = [ReplicaStatus(role="master", index=0, state=state)]
    replicas += [ReplicaStatus(role="worker", index=i, state=state) for i in range(workers)]
    write_curves(paths.metrics("master", 0), curves or {}, steps, now)
    if worker_curves:
        for index in range(workers):
            write_curves(paths.metrics("worker", index), worker_curves, steps, now)
    if params:
        paths.params("master", 0).write_text(json.dumps(dict(params)))
    store.write_status(RunStatus(run_id=run_id, state=state, started_at=now - 5, finished_at=now, replicas=replicas))
    return paths.root


def write_curves(path: Path, curves: Mapping[str, Callable[[int], float]], steps: int, start: float) -> None:
    if not curves:
        return
    with open(path, "a") as handle:
        for step in range(steps):
            values = ",".join(f"{json.dumps(name)}:{float(f(step))!r}" for name, f in curves.items())
            handle.write(f'{{"step":{step},"time":{start + step * 0.01!r},"metrics":{{{values}}}}}\n')
