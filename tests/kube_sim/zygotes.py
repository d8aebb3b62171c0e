"""The kubelet's warm interpreters (`zygote.py`): one per environment an interpreter and torch
start with, shared by every simulated cluster of this process, started when a container first
needs one and ended with this process.

A container is offered to one when it runs this Python on a script or code (`python [-u] SCRIPT`,
`python [-u] -c CODE`),
isolated in its own namespaces, with no memory limit: a fork shares the zygote's pages, which
its resident memory counts, so a container with a limit starts cold and its memory is its own.
The first container of an environment starts cold and starts that environment's zygote; the
next ones are forked from it.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

from jupyter_px.backends.preload import FRAMEWORK_PRELOAD
from jupyter_px.forkserver.pool import reads_at_import

ZYGOTE = Path(__file__).with_name("zygote.py")
#: What a zygote imports ahead: the local templates' list for torch (DDP, and what an optimizer
#: imports on the first training step), one list for both.
PRELOAD = FRAMEWORK_PRELOAD["pytorch"]
#: Beside what `reads_at_import` names (PYTHON*, OMP_*, TORCH*, LD_* ...): the locale and the home
#: folder (a user's site-packages) that an interpreter reads as it starts.
READ_AT_START = ("LANG", "LC_ALL", "LC_CTYPE", "HOME")


class Zygotes:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._folder = ""
        self._parent_end = -1  # the pipe's end the zygotes watch: closed when this process ends
        self._started: dict[str, subprocess.Popen] = {}

    def socket_for(self, env: Mapping[str, str]) -> str:
        """The socket of the zygote for a container with this environment; "" while there is
        none yet (one is started then, for the next such container)."""
        wanted = {name: value for name, value in env.items() if reads_at_import(name) or name in READ_AT_START}
        key = hashlib.sha256(json.dumps(sorted(wanted.items())).encode()).hexdigest()[:16]
        with self._lock:
            if not self._folder:
                self._folder = tempfile.mkdtemp(prefix="kube-sim-zygotes-")
                self._parent_end, holder = os.pipe()
                os.set_inheritable(self._parent_end, False)
                self._holder = holder  # never written: its end is the zygotes' signal
                atexit.register(self.stop)
            path = os.path.join(self._folder, f"{key}.sock")
            process = self._started.get(key)
            if process is None:
                with open(os.path.join(self._folder, f"{key}.log"), "ab") as log:
                    self._started[key] = subprocess.Popen(
                        [sys.executable, "-P", str(ZYGOTE), path, str(self._parent_end), *PRELOAD],
                        env={**wanted, "PATH": env.get("PATH", os.defpath)},
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=log,
                        pass_fds=(self._parent_end,),
                        start_new_session=True,
                    )
                return ""
            if process.poll() is not None or not os.path.exists(path):
                return ""
            return path

    def all_ready(self) -> bool:
        """Whether every zygote started so far takes offers (a test's wait)."""
        with self._lock:
            return bool(self._started) and all(
                process.poll() is None and os.path.exists(os.path.join(self._folder, f"{key}.sock"))
                for key, process in self._started.items()
            )

    def stop(self) -> None:
        with self._lock:
            for process in self._started.values():
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            for process in self._started.values():
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
            self._started.clear()
            if self._folder:
                shutil.rmtree(self._folder, ignore_errors=True)
                self._folder = ""


#: This process's zygotes.
ZYGOTES = Zygotes()
