"""JupyterLab for the browser tests: Galata's test settings, our extension, a private run store."""

import os
from pathlib import Path

from jupyterlab.galata import configure_jupyter_server

configure_jupyter_server(c)  # noqa: F821 (the config object of `jupyter lab --config`)

c.ServerApp.port = int(os.environ.get("PX_UI_TESTS_PORT", "8917"))  # noqa: F821
c.ServerApp.allow_root = True  # noqa: F821
c.ServerApp.jpserver_extensions = {"jupyter_px": True, "jupyter_server_proxy": True}  # noqa: F821
# TensorBoard and the replicas must not outlive the tests' store
os.environ.setdefault("PX_HOME", str(Path(__file__).parent / ".px_home"))
