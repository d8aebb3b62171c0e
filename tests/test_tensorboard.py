"""jupyter_px.tensorboard: real TensorBoard servers on 127.0.0.1, and through jupyter-server-proxy."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import psutil
import pytest

# pytest-jupyter's fixtures (jp_fetch, jp_serverapp, ...), imported rather than registered as a
# plugin: a plugin's autouse fixtures (an event loop and a ServerApp clean-up around every test)
# would apply to the whole test session, this way they stay in this module.
from pytest_jupyter.jupyter_server import *  # noqa: F403  (first: the names below win)
from waiting import wait_for

from jupyter_px import tensorboard
from jupyter_px.presentation.tensorboard import embed
from jupyter_px.processes.detached import ProcessIdentity
from jupyter_px.runstore.layout import RunPaths
from jupyter_px.tensorboard import registry

pytestmark = pytest.mark.tensorboard


@pytest.fixture
def jp_asyncio_loop():
    from jupyter_core.utils import ensure_event_loop

    loop = ensure_event_loop(prefer_selector_loop=True)
    yield loop
    loop.close()


@pytest.fixture
def jp_server_cleanup(jp_asyncio_loop):
    from jupyter_server.serverapp import ServerApp

    yield
    app = ServerApp.instance()
    jp_asyncio_loop.run_until_complete(app._cleanup())
    if hasattr(app, "kernel_manager"):
        app.kernel_manager.context.destroy()


@pytest.fixture(autouse=True)
def px_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("PX_HOME", str(home))
    for var in ("TENSORBOARD_PROXY_URL", "JUPYTERHUB_SERVICE_PREFIX", tensorboard.TENSORFLOW_ENV):
        monkeypatch.delenv(var, raising=False)
    yield home
    for server in tensorboard.list_servers(home):  # never leave a server behind
        tensorboard.stop(server.key, home=home)


def fake_run(run_id: str, tag: str = "loss") -> RunPaths:
    """A run directory whose worker-0 wrote two scalars, with TensorBoard's own writer."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    paths = RunPaths(run_id)
    writer = EventFileWriter(str(paths.tensorboard("worker", 0)))
    for step, value in enumerate([1.0, 0.5]):
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])
        writer.add_event(event_pb2.Event(wall_time=time.time(), step=step, summary=summary))
    writer.close()
    return paths


def tensorboard_process(info) -> psutil.Process:
    """The TensorBoard under a server's watchdog."""
    (child,) = psutil.Process(info.pid).children()
    return child


def loads_tensorflow(process: psutil.Process) -> bool:
    """Whether TensorFlow's native library is mapped into the process (it was imported)."""
    return any("libtensorflow_framework" in region.path for region in process.memory_maps())


def get_json(url: str):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # 127.0.0.1, never a proxy
    with opener.open(url, timeout=10) as response:
        return json.loads(response.read())


def wait_for_runs(url: str, expected: set[str], timeout: float = 30) -> list[str]:
    """TensorBoard discovers runs on its reload cycle: poll /data/runs until they are all there."""

    def listed() -> list[str] | None:
        runs = get_json(url + "data/runs")
        return runs if expected <= set(runs) else None

    return wait_for(listed, f"TensorBoard to list {sorted(expected)}", timeout, poll=0.5)


def test_start_two_runs_reuse_and_stop(px_home):
    fake_run("run-a")
    fake_run("run-b")
    result = tensorboard.start(["run-a", "run-b"])
    assert isinstance(result, tensorboard.Launched), result
    info = result.info
    assert info.logdirs == {
        "run-a": str(RunPaths("run-a").tensorboard_dir),
        "run-b": str(RunPaths("run-b").tensorboard_dir),
    }
    record = json.loads((px_home / "tensorboard" / f"{info.key}.json").read_text())
    assert record["pid"] == info.pid and record["port"] == info.port

    proc = psutil.Process(info.pid)
    assert proc.cmdline()[1:3] == ["-m", "jupyter_px.tensorboard.watchdog"]  # an entry point, no `-c` text
    assert "127.0.0.1" in proc.cmdline() and "--reload_interval" in proc.cmdline()
    assert info.idle_timeout == tensorboard.DEFAULT_IDLE_TIMEOUT_S and info.owner_pid == os.getpid()  # no server
    server = tensorboard_process(info)
    assert server.cmdline()[1:3] == ["-m", "jupyter_px.tensorboard.serve"]
    assert not loads_tensorflow(server)  # TensorBoard's own reader (serve.py), TensorFlow installed or not

    runs = wait_for_runs(info.local_url, {"run-a/worker-0", "run-b/worker-0"})
    assert {"run-a/worker-0", "run-b/worker-0"} <= set(runs)
    scalars = get_json(info.local_url + "data/plugin/scalars/scalars?run=run-a/worker-0&tag=loss")
    assert [(step, value) for _, step, value in scalars] == [(0, 1.0), (1, 0.5)]

    again = tensorboard.start(["run-b", "run-a"])  # same set, other order
    assert isinstance(again, tensorboard.Reused)
    assert (again.info.pid, again.info.port) == (info.pid, info.port)
    assert [s.key for s in tensorboard.list_servers()] == [info.key]

    assert tensorboard.stop(info.key) is True
    assert not psutil.pid_exists(info.pid) or psutil.Process(info.pid).status() == psutil.STATUS_ZOMBIE
    assert tensorboard.list_servers() == []
    assert tensorboard.stop(info.key) is False


def test_port_in_use_fails_with_tensorboards_reason(px_home):
    paths = fake_run("run-a")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = tensorboard.start({"a": paths.tensorboard_dir}, port=port)
    assert isinstance(result, tensorboard.Failed)
    assert "exited" in result.reason and str(port) in result.reason and "already in use" in result.reason
    assert "already in use" in result.output
    assert tensorboard.list_servers() == []


def test_bad_targets_fail_without_starting_anything(px_home, tmp_path):
    cases = {
        "nope": "run 'nope' not found",
        str(tmp_path / "missing"): "does not exist",
        f"a:{tmp_path},{tmp_path}": "needs a name",
        "Bad_Run!": "does not exist",
    }
    for target, message in cases.items():
        result = tensorboard.start(target)
        assert isinstance(result, tensorboard.Failed) and message in result.reason, (target, result)
    assert isinstance(tensorboard.start([]), tensorboard.Failed)
    assert "port must be" in tensorboard.start(str(tmp_path), port=70000).reason
    assert not (px_home / "tensorboard").exists() or not list((px_home / "tensorboard").glob("*.json"))


def test_stale_record_is_not_reused(px_home):
    fake_run("run-a")
    first = tensorboard.start("run-a")
    assert isinstance(first, tensorboard.Launched), first
    record = px_home / "tensorboard" / f"{first.info.key}.json"
    server = psutil.Process(first.info.pid)
    server.kill()  # the server dies; its record stays behind (its watchdog may reap it at once)
    server.wait(10)
    assert record.exists()

    second = tensorboard.start("run-a")
    assert isinstance(second, tensorboard.Launched), second  # not Reused: that server is gone
    assert second.info.pid != first.info.pid and second.info.key == first.info.key
    assert get_json(second.info.local_url + "data/environment")  # and the new one answers
    assert [s.pid for s in tensorboard.list_servers()] == [second.info.pid]


def test_list_servers_drops_records_of_dead_servers(px_home):
    fake_run("run-a")
    result = tensorboard.start("run-a")
    assert isinstance(result, tensorboard.Launched), result
    server = psutil.Process(result.info.pid)
    server.kill()
    server.wait(10)
    assert tensorboard.list_servers() == []
    assert not (px_home / "tensorboard" / f"{result.info.key}.json").exists()


def test_urls(monkeypatch):
    for name in (tensorboard.BASE_URL_ENV, "JUPYTERHUB_SERVICE_PREFIX", "TENSORBOARD_PROXY_URL"):
        monkeypatch.delenv(name, raising=False)  # a server or hub around the test must not decide
    assert tensorboard.proxy_url(6006) == "/px/tensorboard/6006/"
    assert tensorboard.jupyter_base_url("user/ann") == "/user/ann/"
    monkeypatch.setenv("JUPYTERHUB_SERVICE_PREFIX", "/user/bob/")
    assert tensorboard.proxy_url(6006) == "/user/bob/px/tensorboard/6006/"
    monkeypatch.setenv("TENSORBOARD_PROXY_URL", "https://hub.example/user/bob/proxy/%PORT%/")
    assert tensorboard.proxy_url(6123) == "https://hub.example/user/bob/proxy/6123/"
    assert tensorboard.proxy_url(6123, base_url="/lab/") == "/lab/px/tensorboard/6123/"  # explicit wins


def test_embed(monkeypatch):
    info = tensorboard.ServerInfo(key="k", pid=1, port=6007, logdirs={}, logdir_spec="", started=0.0, create_time=0.0)
    shown = embed(tensorboard.Reused(info), height=500, base_url="/user/x/", label="run-a")
    page = shown._repr_html_()
    assert "<iframe src='/user/x/px/tensorboard/6007/'" in page and "height='500'" in page
    assert "TensorBoard (reused) for run-a" in page and "data-url='/user/x/px/tensorboard/6007/'" in page
    assert repr(shown) == "TensorBoard: /user/x/px/tensorboard/6007/"
    failed = embed(tensorboard.Failed("port <busy>", "ERROR: no"))
    assert "port &lt;busy&gt;" in failed._repr_html_() and "ERROR: no" in failed._repr_html_()
    assert repr(failed) == "TensorBoard could not start: port <busy>"
    monkeypatch.setenv(tensorboard.BASE_URL_ENV, "/hub/user/y/")
    assert repr(embed(tensorboard.Launched(info))) == "TensorBoard: /hub/user/y/px/tensorboard/6007/"


@pytest.fixture
def jp_server_config():
    return {"ServerApp": {"jpserver_extensions": {"jupyter_server_proxy": True, "jupyter_px": True}}}


def test_served_through_the_servers_tensorboard_route(
    px_home, jp_fetch, jp_base_url, jp_http_port, jp_asyncio_loop, jp_server_cleanup
):
    import re

    from tornado.httpclient import AsyncHTTPClient

    fake_run("run-a")
    result = tensorboard.start("run-a")
    assert isinstance(result, tensorboard.Launched), result
    port = result.info.port
    wait_for_runs(result.info.local_url, {"worker-0"})

    def fetch(*parts):
        return jp_asyncio_loop.run_until_complete(jp_fetch("px", "tensorboard", *parts, raise_error=False))

    response = fetch(str(port), "data", "runs")
    assert response.code == 200
    assert "worker-0" in json.loads(response.body)
    assert result.info.url(jp_base_url) == f"{jp_base_url}px/tensorboard/{port}/"

    # TensorBoard's page asks for its fonts at the server root; here they resolve under the route
    page = fetch(f"{port}/").body.decode()
    assert "/font-roboto/" in page  # TensorBoard's own page does load fonts...
    assert "url(/font-roboto/" not in page and "'/font-roboto/" not in page  # ...but none from the root
    fonts = set(re.findall(r"url\(([^)]*font-roboto/[^)]+\.woff2)\)", page))
    assert fonts and all(url.startswith(f"{jp_base_url}px/tensorboard/{port}/font-roboto/") for url in fonts)
    font = fetch(*sorted(fonts)[0][len(jp_base_url) :].split("/")[2:])
    assert font.code == 200 and font.body[:4] == b"wOF2"  # the font itself

    # use through the route is what the idle timeout counts from
    assert tensorboard.last_active(result.info) >= result.info.started

    # a port where no TensorBoard of ours serves is not proxied
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        assert fetch(str(other.getsockname()[1]), "data", "runs").code == 404

    # a TensorBoard of ours that does not accept connections yet (starting, or busy on a loaded
    # machine) is a 503 with Retry-After, which a client retries, not the proxy's 500
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: its connections are refused
        starting_port = closed.getsockname()[1]
        starting = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        try:
            identity = ProcessIdentity.of(starting.pid)
            registry.write_record(
                registry.servers_dir(px_home),
                tensorboard.ServerInfo(
                    key="starting",
                    pid=starting.pid,
                    port=starting_port,
                    logdirs={},
                    logdir_spec="",
                    started=time.time(),
                    create_time=identity.started_at or 0.0,
                ),
            )
            answer = wait_for(  # the port index re-reads the records once their directory changed
                lambda: (found := fetch(str(starting_port), "data", "runs")).code != 404 and found,
                what="the starting TensorBoard's record",
                timeout=30,
            )
        finally:
            starting.kill()
            starting.wait()
    assert answer.code == 503 and answer.headers["Retry-After"] == "1", (answer.code, answer.body)
    assert "is starting" in json.loads(answer.body)["message"]

    # Without the Jupyter token the route is refused (login redirect or 403).
    anonymous = jp_asyncio_loop.run_until_complete(
        AsyncHTTPClient().fetch(
            f"http://127.0.0.1:{jp_http_port}{jp_base_url}px/tensorboard/{port}/data/runs",
            follow_redirects=False,
            raise_error=False,
        )
    )
    assert anonymous.code in (302, 403), anonymous.code


def _gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def _wait_gone(pid: int, timeout: float = 60) -> bool:
    return wait_for(lambda: _gone(pid), f"process {pid} to end", timeout, poll=0.2)


def test_idle_server_stops_itself_and_use_keeps_it(px_home, monkeypatch):
    fake_run("run-a")
    fake_run("run-b")
    monkeypatch.setenv(tensorboard.IDLE_TIMEOUT_ENV, "4")
    idle = tensorboard.start("run-a")
    assert isinstance(idle, tensorboard.Launched)
    # what it holds, at once: its idle time runs from here, and a loaded machine starts the next slowly
    data_servers = psutil.Process(idle.info.pid).children(recursive=True)
    used = tensorboard.start("run-b", idle_timeout=4)
    assert isinstance(used, tensorboard.Launched)
    assert idle.info.idle_timeout == 4
    while not _gone(idle.info.pid):  # keep run-b in use meanwhile, as the proxy would
        tensorboard.touch(used.info.key)
        time.sleep(0.5)
    assert all(_wait_gone(child.pid, 10) for child in data_servers)  # its data server too
    assert [s.key for s in tensorboard.list_servers()] == [used.info.key]
    assert "not used for 4 s" in (px_home / "tensorboard" / f"{idle.info.key}.log").read_text()


def test_idle_timeout_setting_is_checked(px_home, monkeypatch):
    fake_run("run-a")
    monkeypatch.setenv(tensorboard.IDLE_TIMEOUT_ENV, "soon")
    result = tensorboard.start("run-a")
    assert isinstance(result, tensorboard.Failed)
    assert result.reason == f"{tensorboard.IDLE_TIMEOUT_ENV}: 'soon' is not a number of seconds"
    monkeypatch.delenv(tensorboard.IDLE_TIMEOUT_ENV)
    assert "idle_timeout must be 0" in tensorboard.start("run-a", idle_timeout=-1).reason
    assert tensorboard.list_servers() == []


def test_tensorflow_is_loaded_only_when_asked_for_and_a_bad_setting_is_named(px_home, monkeypatch):
    pytest.importorskip("tensorflow")
    fake_run("run-a")
    monkeypatch.setenv(tensorboard.TENSORFLOW_ENV, "yes")
    result = tensorboard.start("run-a")
    assert isinstance(result, tensorboard.Failed)
    assert result.reason == f"{tensorboard.TENSORFLOW_ENV}: 'yes' is not 0 or 1"
    assert tensorboard.list_servers() == []

    monkeypatch.setenv(tensorboard.TENSORFLOW_ENV, "1")
    result = tensorboard.start("run-a")
    assert isinstance(result, tensorboard.Launched), result
    assert loads_tensorflow(tensorboard_process(result.info))
    wait_for_runs(result.info.local_url, {"worker-0"})
    scalars = get_json(result.info.local_url + "data/plugin/scalars/scalars?run=worker-0&tag=loss")
    assert [(step, value) for _, step, value in scalars] == [(0, 1.0), (1, 0.5)]  # read alike either way


def test_server_stops_when_the_jupyter_server_it_belongs_to_exits(px_home, monkeypatch):
    """The server extension puts the Jupyter server's pid in the kernels' environment; a process
    stands in for that server here (the browser tests stop a real one)."""
    import subprocess
    import sys

    fake_run("run-a")
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        monkeypatch.setenv(tensorboard.SERVER_PID_ENV, str(owner.pid))
        result = tensorboard.start("run-a", idle_timeout=0)
        assert isinstance(result, tensorboard.Launched), result
        assert result.info.owner_pid == owner.pid and result.info.idle_timeout == 0
        # The owner lives: across two of the watchdog's looks the server keeps answering, with the
        # run loaded (it serves, not merely exists), and its log says nothing about stopping.
        assert "worker-0" in wait_for_runs(result.info.local_url, {"worker-0"})
        looked_twice = time.monotonic() + 2 * tensorboard.WATCH_INTERVAL_S + 0.5
        while time.monotonic() < looked_twice:
            assert get_json(result.info.local_url + "data/environment")
            time.sleep(0.2)
        assert "stopping TensorBoard" not in (px_home / "tensorboard" / f"{result.info.key}.log").read_text()
    finally:
        owner.kill()
        owner.wait()
    assert _wait_gone(result.info.pid, 30)
    assert tensorboard.list_servers() == []


def test_cli_lists_and_stops_servers(px_home):
    import os
    import subprocess
    import sys

    fake_run("run-a")
    fake_run("run-b")
    a, b = tensorboard.start("run-a"), tensorboard.start("run-b", idle_timeout=0)
    assert isinstance(a, tensorboard.Launched) and isinstance(b, tensorboard.Launched)

    def cli(*args):
        env = {**os.environ, "PX_HOME": str(px_home)}
        return subprocess.run(
            [sys.executable, "-m", "jupyter_px.cli", "tensorboard", *args], capture_output=True, text=True, env=env
        )

    listing = cli("list")
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    assert lines[0].split()[:3] == ["KEY", "PID", "PORT"] and len(lines) == 3
    row_a = next(line for line in lines if line.startswith(a.info.key))
    assert str(a.info.port) in row_a and "1h00m" in row_a and "/px/tensorboard/" in row_a
    assert "never" in next(line for line in lines if line.startswith(b.info.key))
    as_json = json.loads(cli("list", "--json").stdout)
    assert {s["port"] for s in as_json} == {a.info.port, b.info.port}

    bad = cli("stop", "nope")
    assert bad.returncode == 2 and "no TensorBoard 'nope'" in bad.stderr
    stopped = cli("stop", str(a.info.port))
    assert stopped.returncode == 0 and f"stopped: TensorBoard {a.info.key}" in stopped.stdout
    assert _gone(a.info.pid) and [s.key for s in tensorboard.list_servers()] == [b.info.key]
    assert cli("stop", "--all").returncode == 0 and _gone(b.info.pid)
    assert cli("list").stdout.strip() == "no TensorBoard servers running"


def test_the_watchdog_entry_point_refuses_bad_arguments_and_an_abandoned_start(tmp_path):
    import subprocess
    import sys

    from jupyter_px.processes import detached

    bad = subprocess.run(
        [sys.executable, "-m", "jupyter_px.tensorboard.watchdog", "only-one"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "usage: python -m jupyter_px.tensorboard.watchdog" in bad.stderr
    args = [str(tmp_path / "active"), "0", "-", "-", "--", "--logdir", str(tmp_path)]
    with detached.start("jupyter_px.tensorboard.watchdog", args, log_path=tmp_path / "log") as child:
        assert child.identity.alive()  # waiting for go; leaving the block abandons it
    assert child.wait(60) == 0  # it returned at once: a TensorBoard started would serve until stopped
