"""A sweep of two objectives (loss minimized, throughput maximized) on the local backend, real
trials and controller: its result is the Pareto front of its trials, which matches a brute-force
front computed from each trial run's own metrics, in the notebook's `Sweep`, the CLI and JSON."""

from __future__ import annotations

import json
import subprocess

import pytest
from local_support import JOBS
from px_cli import CLI, ROOT

import jupyter_px
from jupyter_px.runstore.sweeps import SweepState, TrialState

pytestmark = pytest.mark.jobs

TOPOLOGY = """
hptuning:
  concurrency: 3
  seed: 7
  nsga2: {n_experiments: 12, population_size: 4}
  metrics:
    - {name: loss, optimization: minimize}
    - {name: throughput, optimization: maximize}
  matrix:
    x: {uniform: [0, 1]}
    y: {uniform: [0, 1]}
"""


def brute_force_front(points: dict[int, tuple[float, float]]) -> set[int]:
    """The trials no other trial dominates (loss no higher and throughput no lower, one strictly)."""

    def dominates(a, b):
        return a[0] <= b[0] and a[1] >= b[1] and (a[0] < b[0] or a[1] > b[1])

    return {n for n, p in points.items() if not any(dominates(q, p) for m, q in points.items() if m != n)}


def test_a_two_objective_sweep_reports_its_pareto_front(px_home, tmp_path):
    topology = tmp_path / "two.yaml"
    topology.write_text(TOPOLOGY)
    done = subprocess.run(
        [*CLI, "sweep", "run", str(JOBS / "two_objectives.py"), "-f", str(topology), "--name", "two", "--wait"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    sweep = jupyter_px.Sweep("two")
    status = sweep.status()
    assert status.state == SweepState.SUCCEEDED and status.best is None
    rows = sweep.rows()
    assert len(rows) == 12 and {r.state for r in rows} == {TrialState.COMPLETE}
    # each trial's objectives, read from its run's own metrics (the chief's last values)
    points = {}
    for run in sweep.trials():
        metrics = run.metrics()["master-0"]
        points[run.record.sweep.trial] = (metrics["loss"].values[-1], metrics["throughput"].values[-1])
    front = brute_force_front(points)
    assert 1 <= len(front) < 12
    assert set(status.pareto) == front
    assert {run.record.sweep.trial for run in sweep.pareto} == front  # the notebook's Sweep
    for row in rows:
        assert row.values == {"loss": points[row.number][0], "throughput": points[row.number][1]}
    shown = json.loads(subprocess.run([*CLI, "sweep", "status", "two", "--json"], capture_output=True, text=True,
                                      cwd=ROOT, timeout=120).stdout)  # fmt: skip
    assert set(shown["pareto"]) == front and shown["best"] is None
    assert shown["objectives"] == [
        {"name": "loss", "direction": "minimize"},
        {"name": "throughput", "direction": "maximize"},
    ]
    numbers = ", ".join(str(n) for n in sorted(front))
    assert f"Pareto front (loss min, throughput max): trials {numbers}" in done.stdout
    marked = {int(line.split()[0]) for line in done.stdout.splitlines() if line.split()[1:2] == ["*"]}
    assert marked == front
    frame = sweep.dataframe()
    assert list(frame["values_loss"]) == [points[n][0] for n in range(12)]
