"""The comparison benchmark's run store: `runs` finished runs, each with `points` steps of two
metrics (loss, acc) logged by its master in the tracking format, and its params (lr, seed).
Written once under a directory and reused (a marker file says what is there)."""

from __future__ import annotations

import json
import math
import random
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from jupyter_px.runstore import ReplicaStatus, RunRecord, RunStatus, RunStore

TOPOLOGY = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 1}}}


def run_id(index: int) -> str:
    return f"cmp-{index:04d}"


def _write_run(home: str, index: int, points: int) -> None:
    store = RunStore(home)
    rid = run_id(index)
    if store.exists(rid):
        return
    rng = random.Random(index)
    lr = 10 ** rng.uniform(-4, -1)
    paths = store.create(RunRecord(run_id=rid, name=f"lr-{lr:.2e}", topology=TOPOLOGY), {"main.py": "pass\n"})
    start = time.time() - points * 0.01
    rate = lr * 20 / points * 1000
    lines = []
    for step in range(points):
        decay = math.exp(-rate * step / 1000)
        loss = decay + 0.05 * rng.random()
        acc = 1 - decay * 0.9 - 0.03 * rng.random()
        lines.append(f'{{"step":{step},"time":{start + step * 0.01:.3f},"metrics":{{"loss":{loss!r},"acc":{acc!r}}}}}')
    paths.metrics("master", 0).write_text("\n".join(lines) + "\n")
    paths.params("master", 0).write_text(json.dumps({"lr": lr, "seed": index, "batch_size": 64}))
    now = time.time()
    replicas = [ReplicaStatus(role="master", index=0, state="Succeeded", exit_code=0)]
    replicas.append(ReplicaStatus(role="worker", index=0, state="Succeeded", exit_code=0))
    store.write_status(RunStatus(run_id=rid, state="Succeeded", started_at=start, finished_at=now, replicas=replicas))


def ensure_store(home: Path, runs: int, points: int, workers: int = 2) -> list[str]:
    """The run ids of a store of `runs` x `points` under `home`, written unless already there."""
    marker = home / f".bench-compare-{runs}x{points}"
    ids = [run_id(i) for i in range(runs)]
    if marker.exists():
        return ids
    home.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        list(pool.map(_write_run, [str(home)] * runs, range(runs), [points] * runs))
    marker.write_text(f"{runs} runs x {points} points, written in {time.perf_counter() - started:.0f} s\n")
    return ids


def write_event_files(home: Path, ids: list[str]) -> None:
    """The same points as TensorBoard event files (what a `SummaryWriter` leaves), for the peer
    that reads runs with TensorBoard's own reader. Written next to the JSONL, once."""
    from jupyter_px.runstore.event_writer import ScalarEventWriter
    from jupyter_px.runstore.metrics import MetricsReader

    store = RunStore(home)
    for rid in ids:
        logdir = home / "tb-peer" / rid
        if (logdir / ".done").exists():
            continue
        reader = MetricsReader(store.paths(rid))
        reader.poll()
        loss, acc = reader.series("master-0", "loss"), reader.series("master-0", "acc")
        writer = ScalarEventWriter(logdir, "bench")
        records = [
            (step, when, {"loss": a, "acc": b})
            for step, when, a, b in zip(loss.steps, loss.times, loss.values, acc.values, strict=True)
        ]
        for start in range(0, len(records), 10_000):
            writer.write(records[start : start + 10_000])
        del writer  # its file is flushed after each write and closed with it
        (logdir / ".done").write_text("")
