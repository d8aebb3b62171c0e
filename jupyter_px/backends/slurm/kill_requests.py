"""`jupyter px kill RUN worker-1` on Slurm: one replica ended on purpose, on whatever node it runs.

Slurm signals a step's tasks all together (`scancel --signal` reaches every one), and the
replica's pid means nothing off its node, so the request travels through the run directory the
nodes share: `SlurmBackend.kill` writes `kill-<role>-<index>.json` ({"signal": 9}) into the
attempt's records folder, and the task that holds that replica, which waits for its replica's
exit here (`wait_for_replica`), looks for it between waits, sends the signal to the replica and
removes the request (the backend's answer). The replica's exit is then recorded as any other (killed by SIGKILL:
retryable, so the job is requeued while retries are left: `requeues.py`).

The wait sleeps in `sigtimedwait` on SIGCHLD, so the replica's exit is seen at once (its time
names a run's culprit) and the request folder is looked at once every `POLL_S`.

Standard library only: the task entry imports it on every node.
"""

from __future__ import annotations

import json
import os
import signal
import time

#: How often a task looks for a request for its replica (a stat on the shared filesystem).
POLL_S = 1.0
#: How long `SlurmBackend.kill` waits for the task to act on its request.
ANSWER_WAIT_S = 10.0


def request_path(folder: str, key: str) -> str:
    return os.path.join(folder, f"kill-{key}.json")


def request(folder: str, key: str, signum: int) -> str:
    """Ask the task of replica `key` to send `signum` to it; the request's path."""
    path = request_path(folder, key)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump({"signal": int(signum), "requested_at": time.time()}, handle)
    os.replace(tmp, path)
    return path


def answered(path: str, wait_s: float = ANSWER_WAIT_S) -> bool:
    """Whether the task took the request (removed it) within `wait_s`; the request is withdrawn
    when it did not (the replica had ended, or its task is gone)."""
    deadline = time.monotonic() + wait_s
    while os.path.exists(path):
        if time.monotonic() > deadline:
            try:
                os.unlink(path)
            except FileNotFoundError:
                return True  # taken at the last moment
            return False
        time.sleep(0.1)
    return True


def _take(path: str) -> int | None:
    try:
        with open(path, encoding="utf-8") as handle:
            signum = int(json.load(handle)["signal"])
        os.unlink(path)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return signum


def block_child_signal() -> None:
    """Before the fork: SIGCHLD held back, for `sigtimedwait` (the child lets it go again)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})


def release_child_signal() -> None:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})


def wait_for_replica(pid: int, folder: str, key: str) -> int:
    """Wait for the replica `pid` to end, acting on kill requests meanwhile; its wait status."""
    path = request_path(folder, key)
    while True:
        done, wait_status = os.waitpid(pid, os.WNOHANG)
        if done:
            release_child_signal()
            return wait_status
        if os.path.exists(path):
            signum = _take(path)
            if signum is not None:
                try:
                    os.kill(pid, signum)  # (what it started goes with it: DataLoader workers watch their parent)
                except ProcessLookupError:
                    pass
        signal.sigtimedwait({signal.SIGCHLD}, POLL_S)
