"""`jupyter px validate|env|schema` as a user runs them: real processes, files and stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SEEDS = Path(__file__).parent / "fixtures" / "seeds"
JUPYTER = Path(sys.executable).with_name("jupyter")


def px(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jupyter_px.cli", *args], input=stdin, capture_output=True, text=True, timeout=60
    )


def test_validate_prints_a_table_of_replicas():
    done = px("validate", str(SEEDS / "000_02.yaml"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "tensorflow on local: 11 replicas (master 1, worker 7, ps 3)"
    assert any(line.split()[:2] == ["worker", "2"] and line.split()[-1] == "-" for line in lines)  # no gpu
    assert any(line.split()[:2] == ["worker", "0-1,3-6"] for line in lines)
    assert any(line.split()[:4] == ["ps", "0", "1", "512"] for line in lines)


def test_validate_json_and_stdin():
    done = px("validate", "-", "--json", stdin=(SEEDS / "001_02.yaml").read_text())
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["valid"] and data["counts"] == {"master": 1, "worker": 7, "ps": 3}
    worker2 = next(r for r in data["replicas"] if r["role"] == "worker" and r["index"] == 2)
    assert worker2["resources"] == {
        "cpu": {"requests": 1.0, "limits": 2.0},
        "memory": {"requests": 256.0, "limits": 1024.0},
    }


def test_validate_invalid_exits_2_with_every_problem():
    done = px(
        "validate",
        "-",
        stdin="framework: tensorflow\nenvironment:\n  replicas:\n    n_workers: 7\n    worker:\n      - index: 9\n    n_ps: -1\n",
    )
    assert done.returncode == 2
    assert "environment.replicas.n_ps: -1 is not >= 0" in done.stderr
    assert "Traceback" not in done.stderr
    as_json = json.loads(
        px(
            "validate",
            "-",
            "--json",
            stdin="framework: tensorflow\nenvironment:\n  replicas:\n    n_workers: 7\n    worker: [{index: 9}]\n",
        ).stdout
    )
    assert as_json == {
        "valid": False,
        "problems": [{"path": "environment.replicas.worker[0].index", "message": "9 is not below n_workers (7)"}],
    }


def test_validate_missing_file():
    done = px("validate", "/nonexistent/topology.yaml")
    assert done.returncode == 2 and "cannot read '/nonexistent/topology.yaml'" in done.stderr


def test_env_for_a_worker():
    done = px("env", str(SEEDS / "002_01.yaml"), "--role", "worker", "--index", "1", "--json")
    assert done.returncode == 0, done.stderr
    env = json.loads(done.stdout)
    assert (env["RANK"], env["WORLD_SIZE"], env["MASTER_ADDR"], env["PX_TASK_TYPE"]) == (
        "2",
        "4",
        "127.0.0.1",
        "worker",
    )
    tf = px("env", "-", "--role", "ps", stdin=(SEEDS / "000_01.yaml").read_text())
    line = next(l for l in tf.stdout.splitlines() if l.startswith("TF_CONFIG="))
    assert json.loads(line.split("=", 1)[1])["task"] == {"type": "ps", "index": 0}


def test_env_unknown_replica():
    done = px("env", str(SEEDS / "002_01.yaml"), "--role", "ps", "--index", "0")
    assert done.returncode == 2 and "no such replica (this topology has master 0..0, worker 0..2)" in done.stderr


def test_schema_is_json():
    assert json.loads(px("schema").stdout)["title"] == "jupyter-px topology"


def test_jupyter_px_subcommand():
    """`jupyter px` resolves to our `jupyter-px` executable, as users type it."""
    env = dict(os.environ, PATH=f"{JUPYTER.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run(
        [str(JUPYTER), "px", "validate", str(SEEDS / "000_01.yaml")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "5 replicas" in done.stdout
