"""One replica's ssh session, as the follower holds it: the process, its output into the store.

`ssh HOST -- python RUN/ssh/entry.py RUN ROLE INDEX` (`task_entry.py` says what it does there):
its stdout and stderr (one pipe) are read line by line on a thread. The entry's two lines of its
own (`@px-ssh-ready`, `@px-ssh-exit`) are kept here; every other line is the replica's output,
appended to its log in the run store as it comes. Where the host does not share the run store,
the replica's metrics travel in that output (`@px-metrics` lines, `jupyter_px.tracking`) and are
parsed back into the store (`runstore.log_metrics`), as on Kubernetes.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from ...runstore.layout import FAILURE_LOG_PREFIX, METRICS_LOG_PREFIX, PARAMS_LOG_PREFIX, RunPaths
from ...runstore.log_metrics import ingest_log_lines
from .task_entry import EXIT, READY

_MARKERS = (METRICS_LOG_PREFIX.encode(), PARAMS_LOG_PREFIX.encode(), FAILURE_LOG_PREFIX.encode())


class Channel:
    """One replica's ssh process and what it said."""

    def __init__(self, paths: RunPaths, role: str, index: int, host: str, argv: list[str], *, ingest: bool):
        self.paths, self.role, self.index, self.host = paths, role, index, host
        self.ingest = ingest
        self.ready: dict[str, Any] | None = None
        self.exit: dict[str, Any] | None = None
        self.started_at = time.time()
        self.finished_at: float | None = None
        self.log_path = paths.log(role, index)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.lines_seen = threading.Event()
        self.reader = threading.Thread(target=self._read, name=f"ssh-{self.key}", daemon=True)
        self.reader.start()

    @property
    def key(self) -> str:
        return f"{self.role}-{self.index}"

    def _read(self) -> None:
        assert self.process.stdout is not None
        with open(self.log_path, "ab") as log:
            for raw in self.process.stdout:
                if raw.startswith(READY.encode()):
                    self.ready = _json(raw[len(READY) :])
                    self.lines_seen.set()
                    continue
                if raw.startswith(EXIT.encode()):
                    self.exit = _json(raw[len(EXIT) :])
                    continue
                log.write(raw)
                log.flush()
                if self.ingest and any(marker in raw for marker in _MARKERS):
                    ingest_log_lines(self.paths, self.role, self.index, [raw])
        self.process.wait()
        self.finished_at = time.time()
        self.lines_seen.set()

    @property
    def ended(self) -> bool:
        """Its ssh process has exited and its output is read to the end."""
        return self.finished_at is not None

    def send(self, line: str) -> bool:
        """One line on the replica's stdin (the start line, `term`, `kill`); False once it is gone."""
        stdin = self.process.stdin
        if stdin is None or stdin.closed:
            return False
        try:
            stdin.write(line.encode() + b"\n")
            stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def outcome(self) -> tuple[int, str | None, str | None]:
        """(exit code, signal, message): the entry's record, else ssh's own exit (255: ssh failed)."""
        if self.exit is not None:
            return int(self.exit.get("code") or 0), self.exit.get("signal"), self.exit.get("message")
        code = self.process.returncode if self.process.returncode is not None else -1
        tail = _last_line(self.log_path)
        if code == 255:
            return 255, None, f"ssh to {self.host} failed" + (f": {tail}" if tail else "")
        if code < 0:
            return 128 - code, None, f"its ssh session ended by a signal ({-code})"
        return code, None, f"its session on {self.host} ended without an exit record" + (f": {tail}" if tail else "")

    def close(self) -> None:
        """End of the replica's stdin: the entry stops what is left of it (SIGTERM, the grace, SIGKILL)."""
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
        except OSError:
            pass

    def kill_local(self) -> None:
        """The ssh process itself (its session closes; the entry sees end of file)."""
        if self.process.poll() is None:
            self.process.kill()


def _json(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw.decode("utf-8", "replace"))
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _last_line(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            handle.seek(max(0, handle.tell() - 2048))
            lines = handle.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1][-300:] if lines else ""
