"""`jupyter px sweep ...` and the runs list grouping trials under their sweep, through the real
CLI in a subprocess, on real (single-process, no framework) trials."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import px_cli
import pytest
from local_support import JOBS
from px_cli import ROOT

pytestmark = pytest.mark.jobs

TOPOLOGY = """
hptuning:
  concurrency: 2
  grid_search: {}
  matrix:
    x: {values: [1, 2, 3, 4]}
  metric: {name: loss, optimization: minimize}
"""


def px(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`jupyter px` from the checkout's root (the trials' paths are relative to it)."""
    return px_cli.px(*args, timeout=timeout, cwd=ROOT)


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


def test_a_diverged_trial_is_kept_and_shown_as_such(px_home, tmp_path):
    """A trial whose loss became infinite (or NaN) ends its sweep like any other: `sweep run
    --wait` and `sweep status` show it, its value survives the status file (not as null)."""
    topology = tmp_path / "sweep.yaml"
    topology.write_text(TOPOLOGY)
    done = px("sweep", "run", str(JOBS / "sweep_diverges.py"), "-f", str(topology), "--wait")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and re.search(r"best: trial \d: loss 0.333333", done.stdout), done.stdout
    shown = px("sweep", "status", "last")
    assert shown.returncode == 0, shown.stderr
    rows = {line.split()[0]: line for line in shown.stdout.splitlines() if line[:1].isdigit()}
    assert len(rows) == 4 and sum("inf (diverged)" in row for row in rows.values()) == 1, shown.stdout
    status = json.loads(px("sweep", "status", "last", "--json").stdout)
    by_x = {t["params"]["x"]: t for t in status["trials"]}
    nonfinite = {"value": "Infinity", "values.loss": "Infinity"}
    nonfinite.update({"intermediate.1": "Infinity", "intermediate.2": "Infinity"})
    assert by_x[2]["value"] is None and by_x[2]["nonfinite"] == nonfinite
    assert by_x[2]["intermediate"] == [[1, 10.0], [2, None], [3, None]]
    assert by_x[3]["value"] == pytest.approx(1 / 3) and "nonfinite" not in by_x[3]
    from jupyter_px.runstore.sweeps import SweepStore

    store = SweepStore()
    (sweep_id,) = store.sweep_ids()
    (diverged,) = [t for t in store.status(sweep_id).trials if t.params["x"] == 2]
    assert diverged.value == float("inf") and diverged.intermediate[1] == (2, float("inf"))


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


def test_jupyter_px_run_of_a_file_with_a_sweep_section_runs_the_sweep(px_home, tmp_path):
    """`jupyter px run -f` of a pasted polyaxonfile with a sweep section runs the sweep (it once
    ran the script once, without the sweep's values), with the command's overrides in every trial."""
    topology = tmp_path / "sweep.yaml"
    topology.write_text(TOPOLOGY.replace("[1, 2, 3, 4]", "[1, 3]"))
    script, overrides = str(JOBS / "sweep_args.py"), ("--framework", "pytorch", "--workers", "1")
    done = px("run", script, "-f", str(topology), *overrides, "--wait", "--", "--x={{ x }}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("sweep-") and "sweep_args.py" not in done.stderr
    status = json.loads(px("sweep", "status", "last", "--json").stdout)
    assert {t["params"]["x"]: t["value"] for t in status["trials"]} == {1: 4.0, 3: 0.0}
    trials = json.loads(px("runs", "--json").stdout)
    assert sorted(r["sweep"]["trial"] for r in trials) == [0, 1]
    assert {(r["framework"], r["replicas_total"]) for r in trials} == {("pytorch", 2)}  # a master and a worker


def test_the_api_refuses_one_run_of_a_topology_with_a_sweep_section(px_home, tmp_path):
    """`jupyter_px.submit` starts one run: given a sweep section it says what starts the sweep,
    and records nothing."""
    import jupyter_px

    with pytest.raises(ValueError, match=r"hptuning: the topology has a sweep section.*jupyter_px\.sweep\(\)"):
        jupyter_px.submit(JOBS / "sweep_quick.py", TOPOLOGY)
    assert jupyter_px.runs() == []
