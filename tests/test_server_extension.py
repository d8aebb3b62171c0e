"""The server extension as an application: its traitlets, its keeper, what it publishes for
kernels and what `stop_extension` ends; against the real jupyter_server (pytest-jupyter).

The keeper test runs a real local run and kills its supervisor and watchdog (so nothing but a
keeper can notice); the server records it Lost with no request made.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time

import psutil
import pytest
import yaml
from conftest import make_synthetic_run
from local_support import outputs, run_processes, submit, wait
from waiting import until, wait_for

from jupyter_px import tensorboard
from jupyter_px.runstore import RunStore
from jupyter_px.server import JupyterPxApp

pytest_plugins = ["pytest_jupyter.jupyter_server"]

TOPOLOGY = {"framework": "pytorch", "environment": {"replicas": {"n_workers": 1}}}
#: Short, so the test waits a few intervals, not minutes.
KEEPER_INTERVAL_S = 0.2


@pytest.fixture
def px_config() -> dict:
    """Traitlets of JupyterPxApp a test sets (merged into the server's config)."""
    return {"keeper_interval": KEEPER_INTERVAL_S}


@pytest.fixture
def jp_server_config(px_home, px_config, tmp_path):
    """The server with our extension; `{tmp}` in a configured string is the test's tmp_path."""
    config = {
        name: value.format(tmp=tmp_path) if isinstance(value, str) else value for name, value in px_config.items()
    }
    return {"ServerApp": {"jpserver_extensions": {"jupyter_px": True}}, "JupyterPxApp": config}


def the_app(serverapp) -> JupyterPxApp:
    (app,) = serverapp.extension_manager.extension_apps["jupyter_px"]
    assert isinstance(app, JupyterPxApp)
    return app


# ---------------------------------------------------------------------------------------------
# Configuration


@pytest.mark.parametrize("px_config", [{"home": "{tmp}/elsewhere", "keeper_interval": 0}])
async def test_the_run_store_is_the_configured_home(jp_serverapp, jp_fetch, px_home, tmp_path, px_config):
    """`c.JupyterPxApp.home` wins over $PX_HOME for what the API serves."""
    elsewhere = tmp_path / "elsewhere"
    make_synthetic_run(elsewhere, "there-1", TOPOLOGY, state="Succeeded")
    make_synthetic_run(px_home, "here-1", TOPOLOGY, state="Succeeded")
    body = json.loads((await jp_fetch("px/api/runs")).body)
    assert [run["run_id"] for run in body["runs"]] == ["there-1"]
    assert the_app(jp_serverapp).px_settings().home == elsewhere


async def test_defaults_are_what_the_environment_says(jp_serverapp, px_home):
    app = the_app(jp_serverapp)
    assert app.home == str(px_home)
    assert app.tensorboard_idle_timeout == tensorboard.DEFAULT_IDLE_TIMEOUT_S
    assert app.kubernetes_namespace is None and app.kubernetes_image is None
    assert app.px_settings().kubernetes_overrides() == {}


@pytest.mark.parametrize(
    "px_config",
    [{"tensorboard_idle_timeout": 60, "kubernetes_namespace": "research", "kubernetes_image": "train:1"}],
)
async def test_configured_values_reach_the_handlers(jp_serverapp, px_config):
    settings = the_app(jp_serverapp).state.settings
    assert settings.tensorboard_idle_timeout == 60
    assert settings.kubernetes_overrides() == {"namespace": "research", "image": "train:1"}


@pytest.mark.parametrize(
    ("px_config", "namespace"), [({}, "default"), ({"kubernetes_namespace": "research"}, "research")]
)
async def test_render_uses_the_configured_namespace(jp_fetch, px_config, namespace):
    body = {"topology": {**TOPOLOGY, "backend": "native"}}
    rendered = json.loads((await jp_fetch("px/api/topology/render", method="POST", body=json.dumps(body))).body)
    namespaces = {document["metadata"]["namespace"] for document in yaml.safe_load_all(rendered["yaml"])}
    assert namespaces == {namespace}


@pytest.mark.parametrize("px_config", [{"kubernetes_image": "registry.example.com/train:1"}])
async def test_the_configured_image_fills_in_a_topology_that_names_none(jp_fetch, px_config):
    def images(topology: dict) -> set[str]:
        return {
            container["image"]
            for document in yaml.safe_load_all(topology["yaml"])
            if document["kind"] == "Pod"
            for container in document["spec"]["containers"]
        }

    async def render(topology: dict) -> dict:
        body = json.dumps({"topology": {**topology, "backend": "native"}})
        return json.loads((await jp_fetch("px/api/topology/render", method="POST", body=body)).body)

    assert images(await render(TOPOLOGY)) == {"registry.example.com/train:1"}
    own = {**TOPOLOGY, "environment": {**TOPOLOGY["environment"], "image": "mine:2"}}
    assert images(await render(own)) == {"mine:2"}


def test_idle_timeout_defaults_to_the_variable_and_bad_values_are_refused(monkeypatch):
    monkeypatch.setenv(tensorboard.IDLE_TIMEOUT_ENV, "120")
    assert JupyterPxApp().tensorboard_idle_timeout == 120
    monkeypatch.setenv(tensorboard.IDLE_TIMEOUT_ENV, "soon")  # warned about, not fatal to the server
    assert JupyterPxApp().tensorboard_idle_timeout == tensorboard.DEFAULT_IDLE_TIMEOUT_S
    from traitlets import TraitError

    for name, value in [("keeper_interval", -1), ("tensorboard_idle_timeout", float("nan")), ("home", " ")]:
        with pytest.raises(TraitError, match=f"JupyterPxApp.{name}: "):
            setattr(JupyterPxApp(), name, value)


async def test_kernels_are_told_the_base_url_and_server_pid_until_the_extension_stops(jp_serverapp, jp_base_url):
    assert os.environ[tensorboard.BASE_URL_ENV] == jp_base_url
    assert os.environ[tensorboard.SERVER_PID_ENV] == str(os.getpid())
    await the_app(jp_serverapp).stop_extension()
    assert tensorboard.BASE_URL_ENV not in os.environ and tensorboard.SERVER_PID_ENV not in os.environ


# ---------------------------------------------------------------------------------------------
# The keeper


@pytest.mark.jobs
async def test_the_keeper_records_a_run_whose_supervisor_died_as_lost_without_a_request(jp_serverapp, px_home):
    """Supervisor and watchdog killed: the status file still says Running and no process of the
    run will change that. The server, started as `jupyter server` starts it and then left alone
    (no request), records the run Lost within a few keeper intervals and ends its leftovers."""
    await jp_serverapp.extension_manager.start_all_extensions()  # what ServerApp.start does
    run = await asyncio.to_thread(submit, "faults.py", TOPOLOGY, args=["sleep"])
    await until(lambda: len(outputs(run)) == 2, what="every replica to start")
    status = run.status()
    assert status.state.value == "Running"
    replicas = {r.pid for r in status.replicas}
    supervisor = psutil.Process(next(iter(replicas))).parent()  # the replicas' parent, whatever the status calls it
    assert supervisor is not None
    watchdogs = [child for child in supervisor.children() if child.pid not in replicas]
    for process in [*watchdogs, supervisor]:
        os.kill(process.pid, signal.SIGKILL)

    try:
        store = RunStore(px_home)
        lost = await until(
            lambda: (s := store.status(run.run_id)).state.finished and s, timeout=120, what="the keeper to act"
        )
        assert lost.state.value == "Lost" and "is gone" in (lost.message or ""), lost
        await until(lambda: not run_processes(run.run_id), timeout=30, what="the run's leftovers to be ended")
        await asyncio.to_thread(wait, run)
    finally:  # whatever happened, leave no process of the run behind
        for process in run_processes(run.run_id):
            process.kill()


async def test_the_keeper_digests_finished_runs_for_the_first_comparison(jp_serverapp, px_home):
    """A run that finished while the server ran is digested by the keeper (kept on disk), so even
    the first comparison of it reads none of its points; a running run is left alone."""
    from compare_support import make_run

    from jupyter_px.service import RunService
    from jupyter_px.service.digests import DigestCache

    store = RunStore(px_home)
    make_run(store, "ended-1", curves={"loss": lambda k: 1 / (k + 1)})
    make_run(store, "going-1", curves={"loss": lambda k: 1 / (k + 1)}, state="Running")
    await jp_serverapp.extension_manager.start_all_extensions()
    kept = DigestCache(RunService(store)).folder / "ended-1.500.v3.pickle"
    await until(kept.exists, what="the keeper to digest the finished run")
    assert not (kept.parent / "going-1.500.v3.pickle").exists()
    later = DigestCache(RunService(store))  # e.g. the comparison route of a server started later
    assert later.digest("ended-1", 500).curves["loss"].total == 100 and later.reads == 0


async def test_stop_extension_ends_the_keeper(jp_serverapp, px_home):
    app = the_app(jp_serverapp)
    await jp_serverapp.extension_manager.start_all_extensions()
    keeper = app._keeper
    assert keeper is not None and not keeper.done()
    await app.stop_extension()
    assert keeper.done() and app._keeper is None
    await app.stop_extension()  # twice is harmless (the server may call it after a test did)


@pytest.mark.parametrize("px_config", [{"keeper_interval": 0}])
async def test_a_zero_interval_means_no_keeper(jp_serverapp, px_config):
    await jp_serverapp.extension_manager.start_all_extensions()
    assert the_app(jp_serverapp)._keeper is None


# ---------------------------------------------------------------------------------------------
# The TensorBoard route's port index


@pytest.fixture
def stand_in(px_home):
    """A recorded "TensorBoard" that is a plain HTTP server (the route proxies any HTTP; a real
    TensorBoard takes seconds to start and is tested in test_tensorboard.py)."""
    import socket
    import subprocess
    import sys
    from dataclasses import asdict

    from jupyter_px.runstore.files import atomic_write_json

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(px_home)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def listening() -> bool:
        assert process.poll() is None, "the stand-in exited"
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
        return False

    wait_for(listening, what="the stand-in to listen", timeout=60)
    info = tensorboard.ServerInfo(
        key="standin1",
        pid=process.pid,
        port=port,
        logdirs={},
        logdir_spec="",
        started=time.time(),
        create_time=psutil.Process(process.pid).create_time(),
    )
    (px_home / "tensorboard").mkdir(exist_ok=True)
    atomic_write_json(px_home / "tensorboard" / f"{info.key}.json", asdict(info))
    try:
        yield info
    finally:
        process.kill()
        process.wait()


def test_the_port_index_is_kept_until_the_directory_changes(px_home, stand_in):
    from jupyter_px.server.tensorboard_proxy import TensorBoardPorts

    ports = TensorBoardPorts([px_home], max_age=3600)
    assert ports.find(stand_in.port) == stand_in and ports.find(stand_in.port + 1) is None
    # A record rewritten in place does not change the directory: the index is not re-read...
    record = px_home / "tensorboard" / f"{stand_in.key}.json"
    record.write_text(record.read_text().replace(f'"port": {stand_in.port}', f'"port": {stand_in.port + 1}'))
    assert ports.find(stand_in.port) == stand_in
    # ...until it is old (here: at once), or the directory changes (next test).
    assert TensorBoardPorts([px_home], max_age=0).find(stand_in.port + 1) is not None


async def test_a_stopped_tensorboard_is_a_404_at_once(jp_fetch, px_home, stand_in):
    served = await jp_fetch("px", "tensorboard", f"{stand_in.port}/")
    assert served.code == 200
    await asyncio.to_thread(tensorboard.stop, stand_in.key, home=px_home)
    gone = await jp_fetch("px", "tensorboard", f"{stand_in.port}/", raise_error=False)
    assert gone.code == 404  # the same URL served a moment ago: this is the index, not a missing route


async def test_stop_extension_stops_the_tensorboards_of_this_server(jp_serverapp, px_home, stand_in):
    import dataclasses

    from jupyter_px.runstore.files import atomic_write_json

    record = px_home / "tensorboard" / f"{stand_in.key}.json"
    atomic_write_json(record, dataclasses.asdict(dataclasses.replace(stand_in, owner_pid=os.getpid())))
    await the_app(jp_serverapp).stop_extension()
    assert not record.exists()
    assert not psutil.pid_exists(stand_in.pid) or psutil.Process(stand_in.pid).status() == psutil.STATUS_ZOMBIE


async def test_the_tensorboard_route_asks_the_authorizer(jp_fetch, jp_serverapp, stand_in):
    """A deployment that denies `px` gets no TensorBoard data either (pages, data, websockets),
    while one that allows reading `px` does."""
    from jupyter_server.auth import Authorizer
    from tornado.httpclient import HTTPClientError

    asked: list[tuple[str, str]] = []

    class DenyPx(Authorizer):
        def is_authorized(self, handler, user, action, resource) -> bool:
            asked.append((action, resource))
            return resource != "px"

    class ReadPx(Authorizer):
        def is_authorized(self, handler, user, action, resource) -> bool:
            return resource != "px" or action == "read"

    jp_serverapp.web_app.settings["authorizer"] = DenyPx(parent=jp_serverapp)
    for path in (f"{stand_in.port}/", f"{stand_in.port}/data/plugins_listing", f"{stand_in.port}"):
        with pytest.raises(HTTPClientError) as caught:
            await jp_fetch("px", "tensorboard", path, follow_redirects=False)
        assert caught.value.code == 403, path
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch("px", "tensorboard", f"{stand_in.port}/", method="POST", body="{}")
    assert caught.value.code == 403
    assert ("read", "px") in asked
    jp_serverapp.web_app.settings["authorizer"] = ReadPx(parent=jp_serverapp)
    assert (await jp_fetch("px", "tensorboard", f"{stand_in.port}/")).code == 200
