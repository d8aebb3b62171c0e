"""`jupyter px sweep ...` and the runs list grouping trials under their sweep, through the real
CLI in a subprocess, on real (single-process, no framework) trials."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from local_support import CLI, JOBS, ROOT

pytestmark = pytest.mark.jobs

TOPOLOGY = """
hptuning:
  concurrency: 2
  grid_search: {}
  matrix:
    x: {values: [1, 2, 3, 4]}
  metric: {name: loss, optimization: minimize}
"""


def px(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def test_sweep_run_status_list_and_runs(px_home, tmp_path):
    topology = tmp_path / "sweep.yaml"
    topology.write_text(TOPOLOGY)
    done = px("sweep", "run", str(JOBS / "sweep_quick.py"), "-f", str(topology), "--name", "grid", "--wait")
    assert done.returncode == 0, done.stderr
    sweep_id = done.stdout.splitlines()[0]
    assert sweep_id.startswith("grid-")
    assert re.search(r"best: trial \d: loss 0.333333", done.stdout), done.stdout
    status = json.loads(px("sweep", "status", "grid", "--json").stdout)
    assert status["state"] == "Succeeded" and status["counts"] == {"Complete": 4}
    assert sorted(t["params"]["x"] for t in status["trials"]) == [1, 2, 3, 4]
    best = status["trials"][status["best"]]
    assert best["params"] == {"x": 3} and best["value"] == pytest.approx(1 / 3)
    listing = px("sweep", "list")
    assert listing.returncode == 0 and sweep_id in listing.stdout and "4/4 done" in listing.stdout
    runs = px("runs")
    lines = runs.stdout.splitlines()
    assert lines[1] == f"sweep {sweep_id}"
    assert [line.split()[0] for line in lines[2:6]] == ["t0", "t1", "t2", "t3"]
    as_json = json.loads(px("runs", "--json").stdout)
    assert sorted(r["sweep"]["trial"] for r in as_json) == [0, 1, 2, 3]
    assert all(r["sweep"]["sweep_id"] == sweep_id for r in as_json)
    stopped = px("sweep", "stop", "last")
    assert stopped.returncode == 0 and "Succeeded" in stopped.stdout  # a finished sweep is left as it is


def test_trial_values_fill_script_arguments(px_home, tmp_path):
    topology = tmp_path / "sweep.yaml"
    topology.write_text(TOPOLOGY)
    done = px("sweep", "run", str(JOBS / "sweep_args.py"), "-f", str(topology), "--wait", "--", "--x={{ x }}")
    assert done.returncode == 0, done.stderr
    status = json.loads(px("sweep", "status", "last", "--json").stdout)
    assert {t["params"]["x"]: t["value"] for t in status["trials"]} == {1: 4.0, 2: 1.0, 3: 0.0, 4: 1.0}


def test_bad_input_is_one_message(px_home, tmp_path):
    plain = tmp_path / "plain.yaml"
    plain.write_text("framework: pytorch\n")
    refused = px("sweep", "run", str(JOBS / "sweep_quick.py"), "-f", str(plain))
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "jupyter px sweep: this topology has no sweep: add an hptuning: (Polyaxon v0) or matrix: (v1) section"
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text("hptuning: {matrix: {x: {values: []}}}\n")
    invalid = px("sweep", "run", str(JOBS / "sweep_quick.py"), "-f", str(bad))
    assert (
        invalid.returncode == 2 and "hptuning.matrix.x.values: [] is not a non-empty list of values" in invalid.stderr
    )
    missing = px("sweep", "status", "nope")
    assert missing.returncode == 2 and "no sweep with id or name 'nope'" in missing.stderr
    assert sys.executable
