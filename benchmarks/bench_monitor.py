"""How long one `RunMonitor.refresh()` takes on a big run: 64 replicas, 100k metric points.

    .venv/bin/python benchmarks/bench_monitor.py [--replicas 64] [--points 100000] [--repeat 15]
                                                 [--budget-ms 100] [--write benchmarks/monitor.md]

A synthetic run directory (status.json, a log per replica, metrics JSONL per replica as
`jupyter_px.tracking` writes them) is built in a temporary PX_HOME; nothing is started.
Measured, each as the median of `--repeat` runs:

* first refresh: a new monitor's first update (the newest points, within its history budget);
* refreshes while older history loads: the slowest of them;
* steady state, idle: a refresh when nothing changed (what a running monitor does every second
  while the training code is between log calls);
* steady state, live: a refresh after every replica appended one log line and one metric point
  (what a monitor does every second during training).

Exits 1 if any of these is over the budget. Widgets are not connected to a front end
here: the time is the monitor's (store reads, parsing, rendering, trace updates), not the
websocket's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path


def build_run(home: Path, replicas: int, points: int, log_bytes: int) -> str:
    from jupyter_px.runstore import ReplicaStatus, RunRecord, RunStatus, RunStore
    from jupyter_px.topology import parse_topology, to_dict

    topology = parse_topology({"framework": "pytorch", "environment": {"replicas": {"n_workers": replicas - 1}}})
    store = RunStore(home)
    run_id = "bench-monitor"
    paths = store.create(RunRecord(run_id=run_id, backend="local", topology=to_dict(topology)), {"main.py": "pass\n"})
    now = time.time()
    per_replica = -(-points // replicas)  # at least `points` in all
    total_steps = per_replica * 2
    line = "x" * 79 + "\n"
    for spec in topology.replicas():
        paths.log(spec.role, spec.index).write_text(line * (log_bytes // len(line)))
        with open(paths.metrics(spec.role, spec.index), "w") as handle:
            handle.write(
                "".join(
                    json.dumps(
                        {
                            "step": step,
                            "time": now + step * 0.01,
                            "total_steps": total_steps,
                            "metrics": {"loss": 1.0 / (step + 1)},
                        },
                        separators=(",", ":"),
                    )
                    + "\n"
                    for step in range(per_replica)
                )
            )
    store.write_status(
        RunStatus(
            run_id=run_id,
            state="Running",
            started_at=now - 60,
            replicas=[
                ReplicaStatus(role=spec.role, index=spec.index, state="Running", pid=10_000 + i, started_at=now - 60)
                for i, spec in enumerate(topology.replicas())
            ],
        )
    )
    return run_id


def append_one_step(home: Path, run_id: str, step: int) -> None:
    from jupyter_px.runstore import RunStore

    store = RunStore(home)
    paths = store.paths(run_id)
    for replica in store.status(run_id).replicas:
        with open(paths.log(replica.role, replica.index), "a") as handle:
            handle.write(f"step {step} done\n")
        with open(paths.metrics(replica.role, replica.index), "a") as handle:
            handle.write(json.dumps({"step": step, "time": time.time(), "metrics": {"loss": 1.0 / (step + 1)}}) + "\n")


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return (time.perf_counter() - start) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=64)
    parser.add_argument("--points", type=int, default=100_000, help="metric points in all, spread over the replicas")
    parser.add_argument("--log-kib", type=int, default=256, help="size of each replica's log")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--budget-ms", type=float, default=100.0)
    parser.add_argument("--write", metavar="FILE", help="write the figures as Markdown")
    args = parser.parse_args(argv)

    home = Path(tempfile.mkdtemp(prefix="px-bench-"))
    os.environ["PX_HOME"] = str(home)
    run_id = build_run(home, args.replicas, args.points, args.log_kib * 1024)

    from jupyter_px.api import Run
    from jupyter_px.widgets.run_monitor import RunMonitor

    # warm the imports (plotly, the FigureWidget bundle) once, outside the measurements
    RunMonitor(Run(run_id), autostart=False).close()

    first = []
    for _ in range(max(3, args.repeat // 3)):
        made: list[RunMonitor] = []
        first.append(timed(lambda made=made: made.append(RunMonitor(Run(run_id), autostart=False))))
        plotted = made[0].plot.point_count()
        made[0].close()

    from jupyter_px.runstore.metrics import MetricsReader

    reader_first = statistics.median(timed(MetricsReader(Run(run_id).paths).poll) for _ in range(len(first)))

    monitor = RunMonitor(Run(run_id), autostart=False)
    shown_first = sum(len(s) for metrics in monitor.metrics_reader.data.values() for s in metrics.values())
    backfill = []  # the refreshes that also load older history, until the plot shows all of it
    while monitor.metrics_reader.pending_history:
        backfill.append(timed(monitor.refresh))
    initial_points = sum(len(s) for metrics in monitor.metrics_reader.data.values() for s in metrics.values())
    idle = [timed(monitor.refresh) for _ in range(args.repeat)]
    live = []
    step = args.points // args.replicas
    for _ in range(args.repeat):
        append_one_step(home, run_id, step)
        step += 1
        live.append(timed(monitor.refresh))
    figures = {
        f"first refresh (new monitor: widgets, the newest {shown_first} points, plot)": statistics.median(first),
        f"refresh while older history loads ({len(backfill)} refreshes, the slowest)": max(backfill, default=0.0),
        "steady-state refresh, nothing new": statistics.median(idle),
        "steady-state refresh, 1 line + 1 point per replica": statistics.median(live),
        "for comparison: a full MetricsReader's first poll (every JSONL line)": reader_first,
    }
    width = max(len(k) for k in figures)
    print(
        f"{args.replicas} replicas, {initial_points} metric points ({plotted} plotted after a first refresh), "
        f"{args.log_kib} KiB log each; median of {args.repeat}"
    )
    for name, value in figures.items():
        print(f"  {name.ljust(width)}  {value:8.1f} ms")
    over = [name for name, value in figures.items() if not name.startswith("for comparison") and value > args.budget_ms]

    if args.write:
        command = "python benchmarks/bench_monitor.py " + " ".join(argv if argv is not None else sys.argv[1:])
        rows = "\n".join(f"| {name} | {value:.1f} ms |" for name, value in figures.items())
        Path(args.write).write_text(f"""# Run monitor refresh

`RunMonitor.refresh()` on a synthetic run: {args.replicas} replicas, {initial_points} metric points
(JSONL as `jupyter_px.tracking` writes them), a {args.log_kib} KiB log per replica. Median of
{args.repeat} (first refresh: of {len(first)}). Budget for every refresh of a live monitor: {args.budget_ms:.0f} ms.

| what | median |
| --- | --- |
{rows}

Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {time.strftime("%Y-%m-%d")}.

Command (from the repository root, with the project's virtual environment):

    {command.strip()}

A new monitor (also `%px_attach` to a long run) does not parse every metric line before it
shows anything: its reader has a history budget (`HISTORY_BUDGET_BYTES`, 1 MiB of JSON lines).
The first refresh reads the newest part of each replica's metrics; each later refresh prepends
at most that much older history, until the plot shows everything (the refreshes in the second
row). A finished run's last refresh reads whatever is left in one go. Parsing every line at once
costs the last row's figure.

What a refresh does: read status.json, re-render the replica table (one HTML widget), read the
appended bytes of the shown replica's log, `MetricsReader.poll()` (appended bytes and a bounded
chunk of older history), update
the training progress and redraw only the plot traces that got points (each decimated to at most
{2000} points). Widgets are not connected to a front end in this benchmark, so the time is the
monitor's own, without the websocket.
""")
        print(f"wrote {args.write}")
    if over:
        print(f"over the {args.budget_ms:.0f} ms budget: {', '.join(over)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
