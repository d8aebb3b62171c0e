"""`python -m jupyter_px.tensorboard.watchdog ACTIVITY IDLE_TIMEOUT OWNER_PID OWNER_CREATED -- ARGS`:
TensorBoard, under a watchdog that is its parent.

Nobody reachable, nothing left running. A detached server would otherwise outlive everything (its
kernel, the Jupyter server that proxied it). So the watchdog ends TensorBoard when
- its owner has exited (pid and creation time: `OWNER_PID OWNER_CREATED`, "-" for none): the
  Jupyter server that proxies it (the server extension's `JUPYTER_PX_SERVER_PID`, inherited by the
  kernels it starts), else the process that started it (a kernel run by nbclient or papermill,
  a script): nothing can reach a TensorBoard nobody proxies once its starter is gone, or
- nobody used it for `IDLE_TIMEOUT` seconds (0: never): use is the mtime of `ACTIVITY`, which the
  proxy route and `start()` touch.

Never a zombie. TensorBoard runs as `python -m jupyter_px.tensorboard.serve ARGS` (TensorBoard's
own main, without TensorFlow: serve.py says why), a child of the watchdog,
with its data server as its own child; the watchdog is a child subreaper (Linux), so a data
server whose TensorBoard died first comes back to it, and it waits for every process it holds
before it exits: on its own decision, on SIGTERM (`jupyter px tensorboard stop`, `stop()`), or
when TensorBoard exits; a watchdog killed outright (SIGKILL) takes TensorBoard with it (Linux's
parent-death signal). Its own exit is reaped by its starter while that lives, else by the
system's init (a container needs one that reaps, e.g. `docker run --init`). It exits with
TensorBoard's exit code, so `start()` reports a TensorBoard that could not start.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

from ..processes.detached import ProcessIdentity, await_go
from .config import IDLE_TIMEOUT_ENV, SERVE_MODULE, WATCH_INTERVAL_S

#: Seconds TensorBoard gets to exit on SIGTERM before the rest of its group is killed.
STOP_GRACE_S = 5.0
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_PDEATHSIG = 1


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


def watch(activity: Path, idle_timeout: float, owner: ProcessIdentity | None, stop: threading.Event) -> None:
    """Set `stop` once TensorBoard should end (see the module docstring)."""
    started = time.time()
    interval = min(WATCH_INTERVAL_S, idle_timeout) if idle_timeout > 0 else WATCH_INTERVAL_S
    while not stop.wait(interval):
        why = why_stop(activity, started, idle_timeout, owner)
        if why is not None:
            print(f"jupyter-px: stopping TensorBoard: {why}", file=sys.stderr, flush=True)
            with contextlib.suppress(OSError):
                activity.unlink()
            stop.set()


def become_subreaper() -> bool:
    """Orphans among our descendants (a data server whose TensorBoard died) become our children,
    so we can wait for them; Linux only (elsewhere they go to init, as before)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _end_with_parent() -> None:
    """In TensorBoard, before it runs: SIGTERM when the watchdog dies, even by SIGKILL (Linux's
    parent-death signal), so a killed watchdog never leaves a TensorBoard serving on."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _descendants() -> list[psutil.Process]:
    try:
        return psutil.Process(os.getpid()).children(recursive=True)
    except psutil.Error:
        return []


def stop_children(child: subprocess.Popen) -> None:
    """SIGTERM to TensorBoard and every other process we hold, never to ourselves."""
    with contextlib.suppress(OSError):
        child.terminate()
    for process in _descendants():
        with contextlib.suppress(psutil.Error):
            process.terminate()


def reap_all(grace: float = STOP_GRACE_S) -> None:
    """Wait for every process we hold (TensorBoard, data servers handed to us), SIGKILL for those
    still there after `grace` s: we exit with no child and no zombie left behind."""
    deadline = time.monotonic() + grace
    killed = False
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid:
            continue
        if not killed and time.monotonic() > deadline:
            for process in _descendants():
                with contextlib.suppress(psutil.Error):
                    process.kill()
            killed = True
        time.sleep(0.05)


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
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    become_subreaper()
    child = subprocess.Popen(
        [sys.executable, "-m", SERVE_MODULE, *tensorboard_args],
        stdin=subprocess.DEVNULL,
        preexec_fn=_end_with_parent,  # safe: no thread of ours runs yet
    )
    threading.Thread(target=watch, args=(Path(activity), idle_timeout, owner, stop), daemon=True).start()

    def tensorboard_exited() -> None:
        child.wait()
        stop.set()

    threading.Thread(target=tensorboard_exited, daemon=True).start()
    while not stop.wait(1.0):
        pass
    stop_children(child)
    code = child.wait()  # TensorBoard's exit code (negative: the signal), before reap_all takes it
    reap_all()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
