"""Every notebook in notebooks/ runs top to bottom in a fresh kernel (nbclient), for real:
local runs, the live monitor, metric plots and TensorBoard served through a real Jupyter server
with jupyter-server-proxy.

Asserted from what the notebook keeps, as a user would see it when opening the saved notebook:
the monitor's saved widget state (every replica Succeeded, the final plot has points), the
`%px_plot` output (plotly JSON with points), and the TensorBoard URL, fetched through the server.
"""

from __future__ import annotations

import functools
import json
import os
import re
import secrets
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest
from free_ports import free_port
from nbclient import NotebookClient
from server_support import stop_process, wait_until_serving, write_server_config
from waiting import wait_for
from warm_support import templates_before_a_server

#: kubernetes.ipynb needs a (fake) cluster: tests/test_kubernetes_notebook.py runs it; sweep.ipynb (trials pruned
#: on purpose) has its own checks in tests/test_sweep_notebook.py, workloads.ipynb (what each job computed) in
#: tests/test_workloads.py.
NOTEBOOKS = sorted(
    p
    for p in (Path(__file__).parent.parent / "notebooks").glob("*.ipynb")
    if p.stem not in ("kubernetes", "sweep", "workloads")
)
BASE_URL = "/px-test/"


class JupyterServer:
    """`jupyter server` in a subprocess on 127.0.0.1 with a token, our extension and the proxy."""

    def __init__(self, root: Path, px_home: Path | None = None):
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.root = root
        config = root / "config"
        write_server_config(config)
        self.px_home = px_home or root / "server_px_home"  # the kernels' store: the proxy serves its TensorBoards
        self.log = open(root / "server.log", "wb")  # noqa: SIM115 (open while the server runs; closed in stop())
        templates_before_a_server()  # the kernels' runs start warm, from templates the session keeps
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyter_server",
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={self.port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={self.token}",
                f"--ServerApp.base_url={BASE_URL}",
                f"--ServerApp.root_dir={root}",
                "--allow-root",
            ],
            env={
                **os.environ,
                "JUPYTER_CONFIG_DIR": str(config),
                "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
                "PX_HOME": str(self.px_home),
            },
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        try:
            status_url = f"http://127.0.0.1:{self.port}{BASE_URL}api/status"
            wait_until_serving(self.process, status_url, root / "server.log", {"Authorization": f"token {self.token}"})
        except RuntimeError:
            self.log.close()
            raise

    def get(self, path: str, token: bool = True) -> tuple[int, bytes]:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}")
        if token:
            request.add_header("Authorization", f"token {self.token}")

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None

        opener = urllib.request.build_opener(NoRedirect)
        try:
            with opener.open(request, timeout=30) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def stop(self) -> None:
        stop_process(self.process)
        self.log.close()


@pytest.fixture(scope="module")
def jupyter_server(tmp_path_factory):
    server = JupyterServer(tmp_path_factory.mktemp("server"))
    yield server
    server.stop()


@pytest.fixture
def stop_tensorboards(px_home):
    yield
    from jupyter_px import tensorboard

    for info in tensorboard.list_servers(home=px_home):
        tensorboard.stop(info, home=px_home)


def _execute(path: Path, px_home: Path, workdir: Path, server_pid: int | None = None) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(workdir)}})
    # what our server extension gives the kernels of a server with this base_url: a TensorBoard
    # the notebook starts ends with that server, not with the kernel (which ends with `execute`)
    env = {**os.environ, "PX_HOME": str(px_home), "JUPYTER_PX_BASE_URL": BASE_URL}
    if server_pid is not None:
        env["JUPYTER_PX_SERVER_PID"] = str(server_pid)
    env.pop("TENSORBOARD_PROXY_URL", None)
    client.execute(env=env)
    return nb


def _widget_states(nb) -> dict[str, dict]:
    saved = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    return {model_id: entry["state"] for model_id, entry in saved.items()}


def _outputs(nb, source_start: str) -> list[dict]:
    cells = [cell for cell in nb.cells if cell.cell_type == "code" and cell.source.startswith(source_start)]
    return [output for cell in cells for output in cell.outputs]


@pytest.mark.jobs
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, px_home, tmp_path, stop_tensorboards):
    jupyter_server = JupyterServer(tmp_path / "server", px_home)  # shares the notebook's run store
    try:
        _check_notebook(path, px_home, tmp_path, jupyter_server)
    finally:
        jupyter_server.stop()


def _check_notebook(path, px_home, tmp_path, jupyter_server):
    workdir = tmp_path / "work"
    workdir.mkdir()
    nb = _execute(path, px_home, workdir, server_pid=jupyter_server.process.pid)
    states = _widget_states(nb)

    # the run succeeded, and the monitor's saved state shows every replica's final state
    from jupyter_px.api import runs

    submitted = runs()
    assert submitted and all(run.status().state.value == "Succeeded" for run in submitted)
    monitors = [s for s in states.values() if "px-run-monitor" in (s.get("_dom_classes") or [])]
    assert monitors and all("px-state-Succeeded" in m["_dom_classes"] for m in monitors)
    tables = [s["value"] for s in states.values() if "class='px-replicas'" in str(s.get("value"))]
    expected = {spec.key for run in submitted for spec in run.topology.replicas()}
    for table in tables:
        rows = dict(re.findall(r"data-replica='([^']+)' data-state='([^']+)'", table))
        assert set(rows) == expected and set(rows.values()) == {"Succeeded"}, rows

    # metrics were plotted: the live plot's saved figure and the %px_plot output have points
    figures = [s["_widget_data"] for s in states.values() if s.get("_widget_data")]
    assert figures and sum(len(trace["x"]) for figure in figures for trace in figure) > 0
    plots = [o["data"]["application/vnd.plotly.v1+json"] for o in _outputs(nb, "%px_plot") if "data" in o]
    assert plots and all(sum(len(trace["x"]) for trace in plot["data"]) > 0 for plot in plots)

    # TensorBoard: the embedded URL is served by the Jupyter server (through its proxy, with auth)
    for output in _outputs(nb, "%px_tensorboard"):
        text = output["data"]["text/plain"]
        url = re.match(r"TensorBoard: (\S+)$", text).group(1)
        assert url.startswith(f"{BASE_URL}px/tensorboard/") and f"data-url='{url}'" in output["data"]["text/html"]
        expected_runs = {"master-0", "worker-0", "worker-1"}

        wait_for(
            functools.partial(_shows_runs, jupyter_server, url, expected_runs),
            what=f"TensorBoard showing {expected_runs}",
            timeout=60,
        )
        status, _ = jupyter_server.get(f"{url}data/runs", token=False)
        assert status in (302, 403)  # the proxy is behind the server's authentication


def _shows_runs(jupyter_server, url: str, expected: set[str]) -> bool:
    """Whether the TensorBoard at `url` lists every run of `expected` (it finds runs on its
    reload cycle)."""
    status, body = jupyter_server.get(f"{url}data/runs")
    assert status in (200, 503), body[:500]  # 503 (Retry-After): it is starting
    return status == 200 and expected <= set(json.loads(body))


def test_server_extension_tells_kernels_the_base_url(tmp_path):
    """The extension puts the server's base_url in the server's environment, which kernels inherit."""
    code = (
        "import os, sys\n"
        "from jupyter_server.serverapp import ServerApp\n"
        "app = ServerApp()\n"
        "app.initialize(['--ServerApp.base_url=/user/someone/',"
        f" '--ServerApp.root_dir={tmp_path}', '--ServerApp.port=0', '--ServerApp.ip=127.0.0.1',"
        " '--ServerApp.open_browser=False', '--allow-root'])\n"
        "print(os.environ.get('JUPYTER_PX_BASE_URL'))\n"
    )
    config = tmp_path / "config"
    config.mkdir()
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"jupyter_px": True}}})
    )
    env = {k: v for k, v in os.environ.items() if k != "JUPYTER_PX_BASE_URL"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "JUPYTER_CONFIG_DIR": str(config), "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.stdout.strip().splitlines()[-1] == "/user/someone/", out.stderr[-2000:]
