"""What the REST benchmarks share: a real Jupyter server with the extension on 127.0.0.1, started
with a known token, and waiting until it answers (`bench_runs_api.py`, `bench_api_load.py`)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

TOKEN = "bench"
T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(port: int, root: Path | str, env: Mapping[str, str], extra: Sequence[str] = ()) -> subprocess.Popen:
    """`jupyter_server` with jupyter_px enabled, token `TOKEN`, its output discarded."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter_server",
            f"--port={port}",
            "--ip=127.0.0.1",
            "--no-browser",
            f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={root}",
            "--allow-root",
            "--ServerApp.jpserver_extensions={'jupyter_px': True}",
            *extra,
        ],
        env=dict(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def first_answer(call: Callable[[], T], ok: Callable[[T], bool], timeout: float = 60) -> T:
    """`call()`'s first result that is `ok`, retried every 0.2 s while the server starts (refused
    connections included); SystemExit after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = call()
            if ok(result):
                return result
        except (urllib.error.URLError, ConnectionError):
            pass
        if time.monotonic() > deadline:
            raise SystemExit("the server did not start")
        time.sleep(0.2)
