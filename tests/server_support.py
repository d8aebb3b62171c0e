"""A Jupyter server in a subprocess, for the tests that talk to a real one: the notebooks over
HTTP (`test_notebooks.py`) and JupyterLab in a browser (`browser_support.py`).

Each server gets a free port on 127.0.0.1 (`free_ports.py`), a token, a config folder of its own that enables this
package's server extension and jupyter-server-proxy, and a wait until it answers.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from waiting import DEADLINE_S


def write_server_config(config: Path) -> None:
    """A JUPYTER_CONFIG_DIR whose server loads jupyter_px and jupyter-server-proxy."""
    config.mkdir(parents=True, exist_ok=True)
    extensions = {"jupyter_px": True, "jupyter_server_proxy": True}
    (config / "jupyter_server_config.json").write_text(json.dumps({"ServerApp": {"jpserver_extensions": extensions}}))


def wait_until_serving(
    process: subprocess.Popen,
    url: str,
    log_path: Path,
    headers: dict[str, str] | None = None,
    timeout: float = DEADLINE_S,
) -> None:
    """Return once `url` answers; stop the server and raise with the end of its log if it exits
    or does not answer within `timeout` seconds (a server that takes a minute to start on a
    loaded machine is slow, not broken: one in CI was stopped at 60 s, a second before it served)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=5):
                return
        except (urllib.error.URLError, OSError):
            if process.poll() is not None or time.monotonic() > deadline:
                stop_process(process)
                raise RuntimeError(f"the server did not start:\n{log_path.read_text()[-3000:]}") from None
            time.sleep(0.2)


def stop_process(process: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL after 20 s; reaped either way."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
