"""The REST API when what it stands on fails: a Kubernetes API server that hangs, a full disk.

Against the real jupyter_server (pytest-jupyter) and the simulated Kubernetes API server over HTTP.
How long reads take while submits hang is measured by `benchmarks/bench_api_load.py`; here the
bound on a wait is only a deadlock detector.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import psutil
import pytest
from kubernetes_support import kube_fixture  # noqa: F401 (the `kube` fixture)
from tornado.httpclient import HTTPClientError
from waiting import until, wait_for

from jupyter_px.backends.kubernetes.shared import client as kube_client
from jupyter_px.runstore import RunStore

pytest_plugins = ["pytest_jupyter.jupyter_server"]

NATIVE = {"framework": "pytorch", "backend": "native", "environment": {"replicas": {"n_workers": 1}}}
#: Failure detector for a read that should answer while submits hang (never a speed claim).
DEADLOCK_S = 60.0


@pytest.fixture
def jp_server_config(px_home):
    return {"ServerApp": {"jpserver_extensions": {"jupyter_px": True}}}


def submit_body(script: str = "train.py", topology: dict | None = None) -> dict:
    return {"method": "POST", "body": json.dumps({"topology": topology or NATIVE, "script": script})}


async def answer_of(request) -> tuple[int, str]:
    """(status, message) of a request, whether it succeeds or not."""
    try:
        response = await request
    except HTTPClientError as error:
        body = error.response.body if error.response is not None else b"{}"
        return error.code, json.loads(body).get("message", "")
    return response.code, ""


async def test_reads_and_local_submits_answer_while_six_creates_hang(jp_fetch, jp_root_dir, px_home, kube):
    """Six submits to an API server that never answers once took every thread of the default
    pool (min(32, cores + 4): six on two cores), and `GET runs`, logs and local submits waited
    with them."""
    (jp_root_dir / "train.py").write_text("print('hi')\n")
    with kube.hang("POST", "configmaps"):
        submits = [asyncio.ensure_future(answer_of(jp_fetch("px", "api", "runs", **submit_body()))) for _ in range(6)]
        await until(lambda: kube.hung == 6, "six hung creates")
        response = await asyncio.wait_for(jp_fetch("px", "api", "runs"), DEADLOCK_S)
        assert response.code == 200 and json.loads(response.body)["total"] == 6  # recorded, starting

        local = submit_body(topology={"framework": "pytorch", "environment": {"replicas": {"n_workers": 0}}})
        response = await asyncio.wait_for(jp_fetch("px", "api", "runs", **local), DEADLOCK_S)
        assert response.code == 201
        run_id = json.loads(response.body)["run_id"]
        await until(lambda: RunStore(px_home).status(run_id).state.finished, "the local run to finish")
        response = await asyncio.wait_for(jp_fetch("px", "api", "runs", run_id, "logs"), DEADLOCK_S)
        assert json.loads(response.body)["text"] == "hi\n"
        assert kube.hung == 6  # all of it answered while every create still hung
        kube.fail("POST", "configmaps", 403, "Forbidden", "the test ends the hang", times=6)  # not retried
    answers = await asyncio.gather(*submits)
    assert [code for code, _ in answers] == [400] * 6
    assert not kube.list("configmaps") and [p.name for p in (px_home / "runs").iterdir()] == [run_id]


async def test_a_create_on_a_hung_api_server_times_out(jp_fetch, jp_root_dir, px_home, kube, monkeypatch):
    """Every Kubernetes call has a request timeout: a create against a server that hangs ends
    with a 400 saying so, and nothing is left (the run is rolled back)."""
    monkeypatch.setattr(kube_client.TimedRESTClient, "default_timeout", (10.0, 1.0))
    (jp_root_dir / "train.py").write_text("print('hi')\n")
    with kube.hang("POST", "configmaps"):
        code, message = await answer_of(jp_fetch("px", "api", "runs", **submit_body()))
    assert code == 400
    assert message.startswith("the run could not start on the native backend: creating ConfigMap"), message
    assert "timed out" in message, message
    assert not any((px_home / "runs").iterdir())


# ---------------------------------------------------------------------------------------------
# A full disk (issue 20, item 5)


def fill(home: Path) -> None:
    """Write zeros under `home` until its file system has no byte left."""
    with open(home / "filler", "ab") as filler:
        try:
            while True:
                filler.write(b"\0" * 65536)
                filler.flush()
        except OSError:
            pass


@pytest.fixture
def small_home(tmp_path, monkeypatch):
    """PX_HOME on a 1 MiB tmpfs (`fill` it in the test; mounting needs root: skipped without)."""
    home = tmp_path / "small"
    home.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(home)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        monkeypatch.setenv("PX_HOME", str(home))
        yield home
    finally:
        subprocess.run(["umount", "-l", str(home)], check=False)


class TestDiskFull:
    @pytest.fixture
    def jp_server_config(self, small_home):
        return {
            "ServerApp": {"jpserver_extensions": {"jupyter_px": True}},
            "JupyterPxApp": {"home": str(small_home), "keeper_interval": 0},
        }

    async def test_a_submit_on_a_full_disk_is_a_507_and_leaves_nothing(self, jp_fetch, jp_root_dir, small_home):
        (small_home / "runs").mkdir(mode=0o700)
        fill(small_home)
        (jp_root_dir / "train.py").write_text("print('hi')\n" + "# padding\n" * 2000)
        local = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 1}}}
        code, message = await answer_of(jp_fetch("px", "api", "runs", **submit_body(topology=local)))
        assert (code, message) == (507, "no space left under PX_HOME: free some disk space and try again")
        assert list((small_home / "runs").iterdir()) == []

    async def test_a_running_run_says_its_end_cannot_be_recorded_while_the_disk_is_full(self, jp_fetch, small_home):
        """Its owner (here: this live process) may have seen the replicas end, but cannot write
        the status: reads say so until space is freed."""
        from conftest import make_synthetic_run

        from jupyter_px.runstore import RunStore
        from jupyter_px.runstore.models import RunOwner

        make_synthetic_run(small_home, "stuck-1", {"framework": "pytorch"}, state="Running", log_lines=1)
        store = RunStore(small_home)
        status = store.status("stuck-1")
        status.owner = RunOwner(kind="supervisor", pid=os.getpid(), started_at=psutil.Process().create_time())
        store.write_status(status)
        response = await jp_fetch("px", "api", "runs", "stuck-1")
        assert json.loads(response.body).get("owner_problem") is None

        fill(small_home)
        response = await jp_fetch("px", "api", "runs", "stuck-1")
        detail = json.loads(response.body)
        assert detail["state"] == "Running"
        assert detail["owner_problem"].startswith("cannot record the end: disk full")

        (small_home / "filler").unlink()
        response = await jp_fetch("px", "api", "runs", "stuck-1")
        assert json.loads(response.body).get("owner_problem") is None

    def test_the_cli_says_the_disk_is_full_in_one_line(self, small_home, tmp_path):
        from px_cli import CLI, ROOT

        (small_home / "runs").mkdir(mode=0o700)
        fill(small_home)
        script = tmp_path / "train.py"
        script.write_text("print('hi')\n" + "# padding\n" * 2000)
        env = dict(os.environ, PYTHONPATH=str(ROOT), PX_HOME=str(small_home))
        done = subprocess.run([*CLI, "run", str(script)], capture_output=True, text=True, env=env, timeout=240)
        assert done.returncode == 2
        assert done.stderr == f"jupyter px run: no space left under PX_HOME ({small_home}): free some disk space\n"
        assert list((small_home / "runs").iterdir()) == []


def test_the_server_stops_on_sigterm_while_six_submits_hang(px_home, tmp_path, kube):
    """`jupyter server` as a user runs it, six Kubernetes submits hanging on the API server, then
    SIGTERM: the server exits at once (its pools' threads do not hold the interpreter open until
    each request times out). The bound is a hang detector, not a speed claim: before, the server
    was still there 30 s later."""
    import signal
    import sys
    import time
    import urllib.request

    from free_ports import free_port
    from server_support import stop_process, wait_until_serving, write_server_config

    port, token, root = free_port(), "t0ken", tmp_path / "root"
    root.mkdir()
    (root / "train.py").write_text("print('hi')\n")
    config = tmp_path / "config"
    write_server_config(config)
    log = tmp_path / "server.log"
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(config), JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    env["PYTHONFAULTHANDLER"] = "1"  # a server still up after the bound dumps every thread's stack on SIGABRT
    command = [sys.executable, "-m", "jupyter_server", f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1"]
    command += [f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--ServerApp.open_browser=False"]
    with open(log, "wb") as out:
        server = subprocess.Popen(command + ["--allow-root"], env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/px/api/runs"
    headers = {"Authorization": f"token {token}", "Content-Type": "application/json"}
    try:
        wait_until_serving(server, url, log, headers)
        body = json.dumps({"topology": NATIVE, "script": "train.py"}).encode()
        with kube.hang("POST", "configmaps"):
            for _ in range(6):
                request = urllib.request.Request(url, data=body, headers=headers, method="POST")
                threading_submit(request)
            wait_for(lambda: kube.hung >= 6, "the six submits to hang in the API server", DEADLOCK_S, poll=0.1)
            assert kube.hung == 6, kube.hung
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.send_signal(signal.SIGABRT)  # where each thread waits, into the log
                time.sleep(3)
                raise AssertionError(
                    f"the server was still running 30 s after SIGTERM:\n{log.read_text()[-8000:]}"
                ) from None
            kube.fail("POST", "configmaps", 403, "Forbidden", "the test ends the hang", times=6)
    finally:
        stop_process(server)


def threading_submit(request) -> None:
    """Send `request` from a thread of its own and forget it (its answer never comes)."""
    import threading
    import urllib.error
    import urllib.request

    def send() -> None:
        try:
            urllib.request.urlopen(request, timeout=120).read()
        except (urllib.error.URLError, OSError):
            pass

    threading.Thread(target=send, daemon=True).start()
