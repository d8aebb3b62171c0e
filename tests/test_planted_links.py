"""No read serves a byte from outside the run directory, whatever links the run holds.

Training code runs as the server's user and can replace any file of its run with a link. Each
case plants one (a symbolic link at every level a reader goes through, a hard link, a FIFO) to a
canary outside the store, then walks every read route: the REST API (run list, detail, logs,
metrics, TensorBoard and its proxy, comparison), the CLI (`status`, `logs`) and the Python API.
The canary's content must never come back, and a route that meets the link says so.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_synthetic_run
from tornado.httpclient import HTTPClientError

pytest_plugins = ["pytest_jupyter.jupyter_server"]

TOPOLOGY = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 1}}}
ROOT = Path(__file__).resolve().parents[1]
SECRET = f"CANARY-{secrets.token_hex(8)}"
SECRET_VALUE = 4242.4242


@pytest.fixture
def jp_server_config(px_home):
    return {"ServerApp": {"jpserver_extensions": {"jupyter_px": True}}}


def outside(tmp_path: Path) -> Path:
    """Files outside the store a link could point at, each shaped like what it replaces, so a
    reader that follows the link would parse and serve it."""
    folder = tmp_path / "outside"
    if folder.exists():
        return folder
    (folder / "logs").mkdir(parents=True)
    (folder / "metrics").mkdir()
    (folder / "tb").mkdir()
    line = json.dumps({"step": 1, "time": 1.0, "metrics": {SECRET: SECRET_VALUE}})
    (folder / "secret.txt").write_text(f"{SECRET}\n")
    (folder / "logs" / "worker-0.log").write_text(f"{SECRET}\n")
    (folder / "metrics" / "worker-0.jsonl").write_text(line + "\n")
    (folder / "secret.jsonl").write_text(line + "\n")
    (folder / "secret.json").write_text(json.dumps({SECRET: 1, "run_id": "planted", "state": "Running"}))
    from jupyter_px.runstore.event_writer import ScalarEventWriter

    ScalarEventWriter(folder / "tb", source="outside").write([(1, 1.0, {SECRET: SECRET_VALUE})])
    return folder


def plant(run_dir: Path, case: str, tmp_path: Path) -> str:
    """Put link `case` into the run; returns the path (relative to the run) it replaced."""
    out = outside(tmp_path)

    def link(relative: str, target: Path) -> str:
        path = run_dir / relative
        if path.is_dir() and not path.is_symlink():
            import shutil

            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
        path.symlink_to(target)
        return relative

    if case == "log":
        return link("logs/worker-0.log", out / "secret.txt")
    if case == "log-hardlink":
        (run_dir / "logs/worker-0.log").unlink()
        os.link(out / "secret.txt", run_dir / "logs/worker-0.log")
        return "logs/worker-0.log"
    if case == "log-fifo":
        (run_dir / "logs/worker-0.log").unlink()
        os.mkfifo(run_dir / "logs/worker-0.log")
        return "logs/worker-0.log"
    if case == "logs-dir":
        return link("logs", out / "logs")
    if case == "metrics":
        return link("metrics/worker-0.jsonl", out / "secret.jsonl")
    if case == "metrics-dir":
        return link("metrics", out / "metrics")
    if case == "params":
        return link("params/worker-0.json", out / "secret.json")
    if case == "record":
        return link("record.json", out / "secret.json")
    if case == "status":
        return link("status.json", out / "secret.json")
    if case == "tensorboard":
        return link("tensorboard/worker-0", out / "tb")
    raise AssertionError(case)


CASES = [
    "log",
    "log-hardlink",
    "log-fifo",
    "logs-dir",
    "metrics",
    "metrics-dir",
    "params",
    "record",
    "status",
    "tensorboard",
]


def assert_no_secret(where: str, text: str | bytes) -> None:
    body = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    assert SECRET not in body and str(SECRET_VALUE) not in body, f"{where} served the canary: {body[:300]}"


async def answer(jp_fetch, *parts, **kwargs) -> tuple[int, bytes]:
    try:
        response = await jp_fetch(*parts, **kwargs)
        return response.code, response.body
    except HTTPClientError as error:
        return error.code, error.response.body if error.response is not None else b""


@pytest.mark.parametrize("case", CASES)
async def test_every_rest_route_refuses_a_planted_link(jp_fetch, px_home, tmp_path, case):
    run_dir = make_synthetic_run(px_home, "planted-1", TOPOLOGY, state="Succeeded", metric_points=3)
    (run_dir / "params").mkdir(exist_ok=True)
    (run_dir / "params" / "worker-0.json").write_text('{"lr": 0.1}')
    (run_dir / "tensorboard" / "worker-0").mkdir(parents=True, exist_ok=True)
    relative = plant(run_dir, case, tmp_path)
    said = False
    for parts, kwargs in [
        (("px", "api", "runs"), {}),
        (("px", "api", "runs", "planted-1"), {}),
        (("px", "api", "runs", "planted-1", "logs"), {"params": {"role": "worker", "index": "0"}}),
        (("px", "api", "runs", "planted-1", "metrics"), {}),
        (("px", "api", "compare"), {"method": "POST", "body": json.dumps({"runs": ["planted-1"]})}),
    ]:
        code, body = await answer(jp_fetch, *parts, **kwargs)
        assert code < 500, (parts, code, body[:300])
        assert_no_secret("/".join(parts), body)
        said = said or (code == 409 and relative.encode() in body)
    code, body = await answer(jp_fetch, "px", "api", "runs", "planted-1", "tensorboard", method="POST", body="{}")
    assert_no_secret("tensorboard", body)
    if code == 200:  # started: nothing planted where TensorBoard reads; its data must be clean too
        url = json.loads(body)["url"]
        port = url.rstrip("/").rsplit("/", 1)[-1]
        code, tags = await answer(jp_fetch, "px", "tensorboard", port, "data", "plugin", "scalars", "tags")
        assert_no_secret("the TensorBoard proxy", tags)
    else:
        said = said or relative.encode() in body
    assert said, f"no route said that {relative} is a link"


@pytest.mark.parametrize("case", ["log", "log-hardlink", "logs-dir", "record", "status"])
def test_the_cli_and_the_api_refuse_a_planted_link(px_home, tmp_path, case):
    run_dir = make_synthetic_run(px_home, "planted-2", TOPOLOGY, state="Succeeded", metric_points=3)
    relative = plant(run_dir, case, tmp_path)
    env = dict(os.environ, PYTHONPATH=str(ROOT), PX_HOME=str(px_home))
    said = {}
    for command in (["status", "planted-2"], ["logs", "planted-2", "--role", "worker", "--index", "0"], ["runs"]):
        done = subprocess.run(
            [sys.executable, "-m", "jupyter_px.cli", *command], env=env, capture_output=True, text=True, timeout=60
        )
        said[command[0]] = done.stdout + done.stderr
        assert_no_secret(f"jupyter px {command[0]}", said[command[0]])
    assert relative in said["status"] + said["logs"], said
    from jupyter_px.api import Run
    from jupyter_px.runstore import RunDamaged

    with pytest.raises(RunDamaged, match=f"{relative} is (a symbolic link|a hard link).*: it is not served"):
        if case in ("record", "status"):
            Run("planted-2").status()
        else:
            Run("planted-2").logs(role="worker", index=0)


def test_a_run_directory_replaced_by_a_link_is_not_read(px_home, tmp_path):
    """The whole run directory swapped for a link to a look-alike outside the store."""
    from jupyter_px.runstore import RunDamaged, RunStore

    run_dir = make_synthetic_run(px_home, "planted-3", TOPOLOGY, state="Succeeded")
    lookalike = tmp_path / "lookalike"
    run_dir.rename(lookalike)
    (lookalike / "logs" / "worker-0.log").write_text(f"{SECRET}\n")
    run_dir.symlink_to(lookalike)
    store = RunStore(px_home)
    with pytest.raises(RunDamaged, match="the run directory is a symbolic link"):
        store.read_log("planted-3", "worker", 0)
    with pytest.raises(RunDamaged, match="the run directory is a symbolic link"):
        store.status("planted-3")
