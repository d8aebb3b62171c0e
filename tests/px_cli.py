"""`jupyter px ARGS` as a user types it, in a child process: the one way the tests run the CLI.

The child sees this checkout first on its path (`PYTHONPATH`), so a test runs the code under
test even where the package is installed elsewhere, and an error is one readable message:
`readable=True` (the default) fails the test on a traceback in stderr.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "jupyter_px.cli"]


def px_environ(**extra: str) -> dict[str, str]:
    """This process's environment with the checkout on PYTHONPATH, and `extra` over it."""
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


def px(
    *args: str,
    timeout: float = 240,
    stdin: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    preexec_fn: Callable[[], None] | None = None,
    readable: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run `jupyter px *args` and return what it did (stdout and stderr as text, undecodable
    bytes replaced: hostile input may echo them)."""
    done = subprocess.run(
        [*CLI, *args],
        input=stdin.encode() if isinstance(stdin, str) else stdin,
        capture_output=True,
        timeout=timeout,
        env=dict(env) if env is not None else px_environ(),
        cwd=cwd,
        preexec_fn=preexec_fn,
    )
    result = subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    )
    if readable:
        assert "Traceback" not in result.stderr, result.stderr  # errors are one readable message
    return result
