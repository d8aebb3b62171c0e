"""`python -m jupyter_px.tensorboard.watchdog ACTIVITY IDLE_TIMEOUT OWNER_PID OWNER_CREATED -- ARGS`:
the TensorBoard process, under a watchdog.

Nobody reachable, nothing left running. A detached server would otherwise outlive everything (its
kernel, the Jupyter server that proxied it). So a daemon thread of this process ends its process
group (TensorBoard and its data server) when
- the Jupyter server that proxies it has exited (its pid and creation time: `OWNER_PID
  OWNER_CREATED`, "-" for none; the server extension's `JUPYTER_PX_SERVER_PID`, inherited by the
  kernels it starts), or
- nobody used it for `IDLE_TIMEOUT` seconds (0: never): use is the mtime of `ACTIVITY`, which the
  proxy route and `start()` touch.
TensorBoard's own `main` runs in the main thread with `ARGS`, as `python -m tensorboard.main` would.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from pathlib import Path

from ..detached import ProcessIdentity, await_go
from .config import IDLE_TIMEOUT_ENV, WATCH_INTERVAL_S


def why_stop(activity: Path, started: float, idle_timeout: float, owner: ProcessIdentity | None) -> str | None:
    """Why the watchdog ends its TensorBoard now, or None to keep serving."""
    if owner is not None and not owner.alive():
        return f"the Jupyter server (pid {owner.pid}) that proxies this TensorBoard has exited"
    if idle_timeout > 0:
        try:
            used = activity.stat().st_mtime
        except OSError:
            used = 0.0
        # Only once start() has seen it answer (it touches the file then): a slow start is not idleness.
        if used >= started - 1.0 and time.time() - used > idle_timeout:
            return f"not used for {idle_timeout:g} s ({IDLE_TIMEOUT_ENV})"
    return None


def watch(activity: Path, idle_timeout: float, owner: ProcessIdentity | None) -> None:
    started = time.time()
    while True:
        time.sleep(min(WATCH_INTERVAL_S, idle_timeout) if idle_timeout > 0 else WATCH_INTERVAL_S)
        why = why_stop(activity, started, idle_timeout, owner)
        if why is not None:
            print(f"jupyter-px: stopping TensorBoard: {why}", file=sys.stderr, flush=True)
            with contextlib.suppress(OSError):
                activity.unlink()
            os.killpg(os.getpgid(0), signal.SIGTERM)  # TensorBoard and its data server
            time.sleep(5)
            os.killpg(os.getpgid(0), signal.SIGKILL)


def main(argv: list[str]) -> int:
    try:
        activity, idle, owner_pid, owner_created, separator, *tensorboard_args = argv
        if separator != "--":
            raise ValueError(separator)
        owner = ProcessIdentity(int(owner_pid), float(owner_created)) if owner_pid != "-" else None
        idle_timeout = float(idle)
    except ValueError:
        usage = "ACTIVITY IDLE_TIMEOUT OWNER_PID OWNER_CREATED -- TENSORBOARD_ARGS"
        print(f"usage: python -m jupyter_px.tensorboard.watchdog {usage}; got {argv!r}", file=sys.stderr)
        return 2
    if not await_go():
        return 0  # the start was abandoned: serve nothing
    threading.Thread(target=watch, args=(Path(activity), idle_timeout, owner), daemon=True).start()
    from tensorboard.main import run_main

    sys.argv = ["tensorboard", *tensorboard_args]
    run_main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
