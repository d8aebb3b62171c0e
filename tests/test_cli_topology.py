"""`jupyter px validate|env|schema` as a user runs them: real processes, files and stdin."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import px_cli
import pytest

SEEDS = Path(__file__).parent / "fixtures" / "seeds"
JUPYTER = Path(sys.executable).with_name("jupyter")

#: Address space for a CLI process fed hostile input: enough for the interpreter and a 1,000-worker
#: topology, far below what a YAML bomb or an unbounded replica count would take.
MEMORY_LIMIT = 1536 * 2**20


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def px(
    *args: str, stdin: str | bytes | None = None, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    """`jupyter px ARGS` in a child process under a memory limit (hostile input must not exhaust it)."""
    return px_cli.px(*args, stdin=stdin, env=env, cwd=cwd, timeout=120, preexec_fn=_limit_memory, readable=False)


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
        stdin="framework: tensorflow\nenvironment:\n  replicas:\n"
        "    n_workers: 7\n    worker:\n      - index: -9\n    n_ps: -1\n",
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "invalid topology (2 problems):",
        "  environment.replicas.n_ps: -1 is not >= 0",
        "  environment.replicas.worker[0].index: -9 is not >= 0",
    ]
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
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "jupyter px validate: cannot read '/nonexistent/topology.yaml': No such file or directory"
    ]


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
    line = next(x for x in tf.stdout.splitlines() if x.startswith("TF_CONFIG="))
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


# ---- hostile and odd input: one clear line, never a traceback, nothing stored -------------------

HUGE = "99999999999999999999999999"


def _store_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "px_home"
    home.mkdir(exist_ok=True)
    return dict(os.environ, PX_HOME=str(home))


def _stored_runs(env: dict[str, str]) -> list[str]:
    runs = Path(env["PX_HOME"]) / "runs"
    return sorted(p.name for p in runs.iterdir()) if runs.is_dir() else []


def test_validate_a_huge_count_answers_one_line(tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_text(f"framework: pytorch\nenvironment:\n  replicas:\n    n_workers: {HUGE}\n")
    done = px("validate", str(path))
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"invalid topology: environment.replicas.n_workers: {HUGE} is above the maximum (10000)"
    ]


def test_run_with_a_huge_worker_flag_is_refused_and_nothing_is_stored(tmp_path):
    env = _store_env(tmp_path)
    script = tmp_path / "train.py"
    script.write_text("print('never runs')\n")
    done = px("run", str(script), "--framework", "pytorch", "--workers", "10000000000", env=env)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr
    assert "environment.replicas.n_workers: 10000000000 is above the maximum (10000)" in done.stderr
    assert len(done.stderr.splitlines()) <= 2
    assert _stored_runs(env) == []


def test_validate_refuses_a_billion_laughs_quickly_with_a_short_message(tmp_path):
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"l{i}: &l{i} [{','.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]
    bomb = "\n".join(lines) + "\n"  # 9**9 = 387 million values from about 400 bytes
    assert len(bomb) < 500
    done = px("validate", "-", stdin=bomb)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.splitlines() == [
        "invalid topology: yaml: line 7, column 10: aliases (*name) expand this document beyond 1,000,000 values; "
        "write the topology out instead"
    ]


def test_validate_refuses_nesting_that_would_crash_the_yaml_parser():
    done = px("validate", "-", stdin="[" * 100_000 + "]" * 100_000)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert done.stderr.splitlines() == ["invalid topology: yaml: line 1, column 65: nested more than 64 levels deep"]


def test_validate_a_file_that_is_not_utf8_names_the_file(tmp_path):
    path = tmp_path / "latin.yaml"
    path.write_bytes("framework: pytorch\n# caf\u00e9\n".encode("latin-1"))
    done = px("validate", str(path))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"jupyter px validate: cannot read {str(path)!r}: not UTF-8 text (byte 0xe9 at offset 24); save it as UTF-8"
    ]
    from_stdin = px("validate", "-", stdin=path.read_bytes())
    assert from_stdin.stderr.splitlines() == [
        "jupyter px validate: cannot read standard input: not UTF-8 text (byte 0xe9 at offset 24); save it as UTF-8"
    ]
    as_json = json.loads(px("validate", str(path), "--json").stdout)
    assert as_json["valid"] is False and "not UTF-8 text" in as_json["problems"][0]["message"]


def test_validate_accepts_utf8_with_a_byte_order_mark(tmp_path):
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + "framework: pytorch\nname: caf\u00e9\n".encode())
    done = px("validate", str(path), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["topology"]["name"] == "caf\u00e9"


def test_validate_refuses_an_oversized_file_without_reading_it_all(tmp_path):
    path = tmp_path / "big.yaml"
    with open(path, "wb") as handle:
        handle.write(b"framework: pytorch\n")
        handle.truncate(3 * 2**30)  # a sparse 3 GiB file: reading it whole would break the memory limit
    done = px("validate", str(path))
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.splitlines() == [
        f"jupyter px validate: cannot read {str(path)!r}: larger than the limit of 2,097,152 characters (2 MiB)"
    ]


def test_run_with_a_topology_file_that_is_not_utf8_names_it(tmp_path):
    env = _store_env(tmp_path)
    script = tmp_path / "train.py"
    script.write_text("print('never runs')\n")
    topology = tmp_path / "latin.yaml"
    topology.write_bytes(b"framework: pytorch\n# caf\xe9\n")
    done = px("run", str(script), "-f", str(topology), env=env)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        f"jupyter px run: cannot read topology file {str(topology)!r}: "
        "not UTF-8 text (byte 0xe9 at offset 24); save it as UTF-8"
    ]
    assert _stored_runs(env) == []


def test_run_refuses_a_script_that_does_not_decode_naming_it(tmp_path):
    env = _store_env(tmp_path)
    script = tmp_path / "train.py"
    script.write_bytes(b"print('caf\xe9')\n")  # latin-1 bytes, no coding line: not valid Python source
    done = px("run", str(script), "--framework", "pytorch", env=env)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"jupyter px run: script {str(script)!r} is not utf-8 text (byte 0xe9 at offset 10); "
        "save it as UTF-8 or declare its encoding on its first line (# -*- coding: latin-1 -*-)"
    ]
    assert _stored_runs(env) == []


@pytest.mark.jobs
def test_run_honours_a_scripts_coding_line(tmp_path):
    """PEP 263: Python runs such a file as its coding line says; so must a run."""
    env = _store_env(tmp_path)
    script = tmp_path / "train.py"
    script.write_bytes(b"# -*- coding: latin-1 -*-\nprint('caf\xe9', len('caf\xe9'))\n")
    done = px("run", str(script), "--wait", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "caf\u00e9 4" in done.stdout
    (run_id,) = _stored_runs(env)
    assert "caf\u00e9 4" in px("logs", run_id, env=env).stdout


def test_validate_refuses_what_no_backend_can_use_with_field_paths():
    done = px(
        "validate",
        "-",
        stdin="framework: pytorch\nbackend: native\nenvironment:\n  env:\n    A=B: x\n"
        "  node_selector:\n    'bad key!': v\n  replicas:\n    n_workers: true\n",
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[1:] == [
        "  environment.env.A=B: environment variable name 'A=B' contains '=', which ends a name",
        "  environment.node_selector.bad key!: label key 'bad key!' is not valid: use alphanumerics, '-', '_' "
        "and '.', beginning and ending with an alphanumeric",
        "  environment.replicas.n_workers: true is not a whole number",
    ]
    done = px(
        "validate", "-", stdin="framework: pytorch\nenvironment:\n  replicas:\n    n_workers: 8\n    n_workers: 2\n"
    )
    assert done.returncode == 2
    assert "environment.replicas.n_workers: given more than once (lines 4 and 5)" in done.stderr
