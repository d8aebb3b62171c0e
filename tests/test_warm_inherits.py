"""A warm replica inherits what a cold one does, from whom a cold one does: the submitter's time
zone, niceness, resource limits, umask and locale, fresh random generators (torch's CPU one,
NumPy's legacy global, `random`), and thread pools sized to its share of the cores.

Each run is submitted from a process of its own that has `nice 5`, `ulimit -n 512`, umask 027,
TZ=Asia/Tokyo and LC_ALL=C (none of which the warm template had when it started), once cold
and twice warm; every replica records what it sees (tests/jobs/inherits_probe.py).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import pytest
from local_support import JOBS
from px_cli import ROOT
from warm_support import ensure_templates

from jupyter_px.runstore import RunStore

pytestmark = pytest.mark.jobs

TWO = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 1}}}

#: The submitter: takes on the attributes, submits, waits; prints the run id.
SUBMITTER = """
import json, os, resource, sys
os.nice(5)
resource.setrlimit(resource.RLIMIT_NOFILE, (512, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
os.umask(0o027)
from jupyter_px.api import submit
run = submit(sys.argv[1], json.loads(sys.argv[2]), cold=sys.argv[3] == "cold")
status = run.wait(timeout=600)
print(json.dumps([run.run_id, status.state.value, status.launch]))
"""


def _submit(mode: str) -> tuple[str, str]:
    env = {**os.environ, "TZ": "Asia/Tokyo", "LC_ALL": "C", "JUPYTER_PX_WARM": "1"}
    args = [sys.executable, "-c", SUBMITTER, str(JOBS / "inherits_probe.py"), json.dumps(TWO), mode]
    done = subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    run_id, state, launch = json.loads(done.stdout.splitlines()[-1])
    assert state == "Succeeded", done.stdout
    return run_id, launch


def _seen(run_id: str) -> dict[str, dict]:
    paths = RunStore().paths(run_id)
    return {path.stem: json.loads(path.read_text()) for path in sorted(paths.outputs_dir.glob("*.json"))}


def test_a_warm_replica_inherits_what_a_cold_one_does(px_home, tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PX_WARM_DIR", str(tmp_path / "warm"))
    monkeypatch.setenv("JUPYTER_PX_WARM", "1")
    ensure_templates()
    from jupyter_px.backends.local import warm

    try:
        runs = {mode: _submit(mode) for mode in ("cold", "warm", "warm again")}
    finally:
        warm.stop_all("the test ended")
    assert runs["cold"][1].startswith("cold") and runs["warm"][1].startswith("warm"), runs
    assert runs["warm again"][1].startswith("warm"), runs
    seen = {mode: _seen(run_id) for mode, (run_id, _) in runs.items()}
    shares = str(max(1, len(os.sched_getaffinity(0)) // 2))
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    expected = {
        "tzname": ["JST", "JST"],
        "utc_offset": "+0900",
        "nice": 5,
        "nofile": [512, hard],
        "umask": 0o027,
        "lc_ctype": "C",
        "omp": shares,
        "mkl": shares,
        "torch_threads": int(shares),
    }
    for mode, replicas in seen.items():
        assert set(replicas) == {"master-0", "worker-0"}, (mode, replicas)
        for key, record in replicas.items():
            assert {name: record[name] for name in expected} == expected, (mode, key)
    # every process drew its own numbers, as fresh interpreters do
    for generator in ("torch_seed", "torch_draw", "numpy_draw", "random_draw"):
        draws = [json.dumps(record[generator]) for replicas in seen.values() for record in replicas.values()]
        assert len(set(draws)) == len(draws), (generator, draws)
