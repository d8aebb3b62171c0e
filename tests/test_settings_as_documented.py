"""Settings and paths as documented: every numeric setting refuses NaN and infinity, wherever
it is written (a settings file's `.nan`, a variable's `inf`), with one line naming it; and
`jupyter_px.submit("train.py", "topology.yaml")`, as docs/notebook.md shows it, reads the file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from px_cli import ROOT

from jupyter_px.backends import BackendError


@pytest.mark.parametrize("text", [".nan", ".inf", "-.inf"])
def test_a_slurm_settings_file_refuses_a_non_finite_number(text, tmp_path, monkeypatch):
    from jupyter_px.backends.slurm.settings import load_settings

    path = tmp_path / "slurm.yaml"
    path.write_text(f"poll_interval_s: {text}\n")
    monkeypatch.setenv("PX_SLURM_CONFIG", str(path))
    with pytest.raises(BackendError) as error:
        load_settings()
    assert str(error.value).startswith(f"{path}: poll_interval_s: ") and "is not a finite number" in str(error.value)


@pytest.mark.parametrize(
    "variable, says",
    [
        ("PX_SLURM_POLL_INTERVAL_S", "PX_SLURM_POLL_INTERVAL_S: 'nan' is not a finite number of seconds"),
        ("PX_SLURM_RENDEZVOUS_TIMEOUT_S", "PX_SLURM_RENDEZVOUS_TIMEOUT_S: 'nan' is not a finite number of seconds"),
        ("PX_STOP_GRACE_S", "PX_STOP_GRACE_S: 'nan' is not a finite number of seconds"),
    ],
)
def test_a_slurm_variable_refuses_nan(variable, says, tmp_path, monkeypatch):
    from jupyter_px.backends.slurm.settings import load_settings

    monkeypatch.setenv("PX_SLURM_CONFIG", str(tmp_path / "none.yaml"))
    monkeypatch.setenv(variable, "nan")
    with pytest.raises(BackendError) as error:
        load_settings()
    assert str(error.value) == says


@pytest.mark.parametrize("text", [".nan", ".inf"])
def test_the_local_settings_refuse_a_non_finite_idle_time(text, tmp_path, monkeypatch):
    from jupyter_px.backends.local.settings import load_settings

    path = tmp_path / "local.yaml"
    path.write_text(f"warm_idle_s: {text}\n")
    monkeypatch.setenv("PX_LOCAL_CONFIG", str(path))
    with pytest.raises(BackendError, match=r"warm_idle_s: .* is not a finite number of seconds"):
        load_settings()
    path.unlink()
    monkeypatch.setenv("JUPYTER_PX_WARM_IDLE_S", "inf")
    with pytest.raises(BackendError, match=r"JUPYTER_PX_WARM_IDLE_S: 'inf' is not a finite number of seconds"):
        load_settings()


def test_the_tensorboard_idle_timeout_refuses_infinity(monkeypatch):
    from jupyter_px.tensorboard.config import idle_timeout_setting

    monkeypatch.setenv("JUPYTER_PX_TENSORBOARD_IDLE_TIMEOUT", "inf")
    with pytest.raises(ValueError, match=r"'inf' is not a finite number of seconds"):
        idle_timeout_setting()


@pytest.mark.parametrize("variable", ["PX_STOP_GRACE_S", "PX_COMPLETION_GRACE_S", "PX_MASTER_HEAD_START_S"])
def test_the_local_backends_tunables_refuse_nan(variable):
    code = "import jupyter_px.backends.local.config"
    env = {**os.environ, variable: "nan"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode != 0 and f"{variable}: 'nan' is not a finite number of seconds" in done.stderr


@pytest.mark.jobs
@pytest.mark.parametrize("form", ["relative str", "absolute str", "Path"])
def test_submit_reads_a_topology_path_as_the_file(px_home, tmp_path, monkeypatch, form):
    from jupyter_px.api import submit

    (tmp_path / "topology.yaml").write_text("framework: pytorch\nenvironment:\n  replicas:\n    n_workers: 1\n")
    monkeypatch.chdir(tmp_path)
    given = {"relative str": "topology.yaml", "absolute str": str(tmp_path / "topology.yaml")}.get(form)
    run = submit("print('read')\n", given if given is not None else Path("topology.yaml"))
    assert [key for key, _ in run.replicas()] == ["master", "worker"]
    assert run.wait(timeout=300).state.value == "Succeeded"


def test_a_missing_topology_file_is_named(px_home, tmp_path, monkeypatch):
    from jupyter_px.api import submit

    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"topology file 'topology.yaml' does not exist"):
        submit("print(1)\n", "topology.yaml")
