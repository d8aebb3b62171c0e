"""Small ones from the adversarial pass: names that would make a run unreachable, the runs
folder's mode, `jupyter px logs --follow` on a run deleted under it (real CLI subprocess)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time

import psutil
import pytest
from px_cli import CLI, ROOT

from jupyter_px.runstore import RunStore
from jupyter_px.runstore.models import RunOwner
from jupyter_px.service import RunService, SourceText, Submission

PYTORCH = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 1}}}


@pytest.mark.parametrize(
    "name, reason",
    [
        ("caf\udce9", "name: 'caf\\udce9' is not valid text ('\\udce9' at position 3 is a lone surrogate)"),
        ("last", "name: 'last' is reserved (it means the newest run): choose another name"),
    ],
    ids=["lone-surrogate", "last"],
)
def test_a_name_no_run_could_be_found_by_is_refused_at_submit(px_home, name, reason):
    with pytest.raises(ValueError) as refused:
        RunService().submit(Submission(SourceText("pass\n"), PYTORCH, name=name))
    assert str(refused.value) == reason
    assert not (px_home / "runs").exists() or not any((px_home / "runs").iterdir())


async def test_the_rest_api_refuses_a_reserved_name(px_home, jp_fetch, jp_root_dir):
    import json

    from tornado.httpclient import HTTPClientError

    (jp_root_dir / "train.py").write_text("pass\n")
    body = json.dumps({"topology": PYTORCH, "script": "train.py", "name": "last"})
    with pytest.raises(HTTPClientError) as refused:
        await jp_fetch("px", "api", "runs", method="POST", body=body)
    assert refused.value.code == 400
    assert json.loads(refused.value.response.body)["message"].endswith(
        "name: 'last' is reserved (it means the newest run): choose another name"
    )


def test_the_runs_folder_is_private(px_home):
    from conftest import make_synthetic_run

    make_synthetic_run(px_home, "first-1", PYTORCH)
    assert stat.S_IMODE((px_home / "runs").stat().st_mode) == 0o700
    assert stat.S_IMODE((px_home / "runs" / "first-1").stat().st_mode) == 0o700


@pytest.mark.parametrize("deletion", ["at once", "file by file"])
def test_logs_follow_on_a_deleted_run_ends_with_one_line(px_home, deletion):
    """The run is Running with a live owner (this test process), so `--follow` keeps reading
    until the run directory disappears under it. A deletion under way removes the files one by
    one (`rm -rf`, `shutil.rmtree` on a loaded machine): read in between, the run has no status
    but still its record, which must not read as a damaged run."""
    from conftest import make_synthetic_run

    make_synthetic_run(px_home, "doomed-1", PYTORCH, log_lines=3)
    store = RunStore(px_home)
    status = store.status("doomed-1")
    status.owner = RunOwner(kind="supervisor", pid=os.getpid(), started_at=psutil.Process().create_time())
    store.write_status(status)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with subprocess.Popen(
        [*CLI, "logs", "doomed-1", "--follow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as follower:
        assert follower.stdout is not None
        assert follower.stdout.readline().startswith("[master.0] master-0 line 0")
        time.sleep(0.5)  # let it poll a few times on the live run
        if deletion == "file by file":
            (px_home / "runs" / "doomed-1" / "status.json").unlink()
            time.sleep(0.5)  # the CLI reads the run here: a record, no status
        shutil.rmtree(px_home / "runs" / "doomed-1")
        _, err = follower.communicate(timeout=120)
    assert follower.returncode == 1
    assert err == "jupyter px logs: run doomed-1 was deleted while its logs were printed\n"


pytest_plugins = ["pytest_jupyter.jupyter_server"]


@pytest.fixture
def jp_server_config(px_home):
    return {"ServerApp": {"jpserver_extensions": {"jupyter_px": True}}}


def test_px_home_naming_a_file_is_named_by_every_command(tmp_path):
    """PX_HOME pointing at a file: every command says so in one line (before: "no runs yet in
    .../afile/runs")."""
    import sys
    from pathlib import Path

    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    env = dict(os.environ, PX_HOME=str(afile), PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    for command in (["runs"], ["status", "last"], ["logs", "last"], ["stop", "last"], ["sweep", "list"]):
        done = subprocess.run(
            [sys.executable, "-m", "jupyter_px.cli", *command], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert done.stderr.strip() == (
            f"jupyter px {command[0]}: PX_HOME {str(afile)!r} is not a folder: point PX_HOME at a folder "
            "(or unset it for ~/.jupyter_px)"
        ), done.stderr
    assert afile.read_text() == "not a folder"  # and nothing was made of it
