"""`python -m tests.slurm_cluster`: a real Slurm cluster anyone can start on this machine, and stop
without leaving a daemon, a job's process or a cgroup folder behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from outside_data import under_ci
from slurm_cluster import why_unavailable
from slurm_cluster.daemons import CGROUP_ROOT, alive, read_pid

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[1]


def _require_slurm() -> None:
    problem = why_unavailable()
    if problem:
        if under_ci():
            pytest.fail(f"Slurm cannot be started here: {problem}")
        pytest.skip(problem)


def _read_until(process: subprocess.Popen, marker: str, timeout: float = 60) -> list[str]:
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if marker in line:
            return lines
    raise AssertionError(f"no {marker!r} in {lines} (stderr: {process.stderr.read() if process.stderr else ''})")


def test_python_m_tests_slurm_cluster_starts_three_idle_nodes_and_stops_clean():
    _require_slurm()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.slurm_cluster"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("SLURM_")},
    )
    try:
        lines = _read_until(process, "export SLURM_CONF=")
        conf = Path(lines[-1].split("=", 1)[1])
        env = {**os.environ, "SLURM_CONF": str(conf)}
        nodes = subprocess.run(
            ["sinfo", "--noheader", "--Node", "--format=%N %t"], env=env, capture_output=True, text=True, check=True
        ).stdout.split("\n")
        states = dict(line.split() for line in nodes if line.strip())
        assert len(states) == 3 and set(states.values()) == {"idle"}, states
        ran = subprocess.run(
            ["srun", "--nodes=3", "--ntasks=3", "printenv", "SLURMD_NODENAME"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert sorted(ran.stdout.split()) == sorted(states), ran.stderr
        folder = conf.parent
        pids = [read_pid(p) for p in (folder / "run").glob("*.pid")] + [read_pid(folder / "munge" / "munged.pid")]
        assert len(pids) == 5 and all(pid and alive(pid) for pid in pids)  # slurmctld, 3 slurmd, munged
        # a job still running when the cluster stops: its processes go too
        subprocess.run(["sbatch", "--output=/dev/null", "--wrap=sleep 300"], env=env, check=True, capture_output=True)
        time.sleep(1)
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert out.strip().endswith("stopped") and "left behind" not in err
    assert not any(pid and alive(pid) for pid in pids)
    assert not folder.exists()
    assert not [p for node in states for p in CGROUP_ROOT.glob(f"*/slurm_{node}")]
