"""The task side of `jupyter px kill` on Slurm (`backends/slurm/kill_requests.py`), with real
processes and no cluster: a task waiting for its replica acts on a request written for it (and on
no other) and removes it as its answer; a request nobody takes is withdrawn; a replica that ends
by itself gives its own exit."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from jupyter_px.backends.slurm import kill_requests


@pytest.fixture(autouse=True)
def _child_signal_released():
    """The test process gets SIGCHLD back whatever happens (asyncio's child watchers need it)."""
    yield
    kill_requests.release_child_signal()


def _replica(seconds: float) -> int:
    """A child that sleeps `seconds` (SIGCHLD held back in the parent, as the task holds it)."""
    kill_requests.block_child_signal()
    pid = os.fork()
    if pid == 0:
        kill_requests.release_child_signal()
        time.sleep(seconds)
        os._exit(0)
    return pid


def test_a_request_for_this_replica_kills_it_and_is_removed(tmp_path):
    pid = _replica(60)
    other = kill_requests.request(str(tmp_path), "worker-1", signal.SIGTERM)  # not this task's
    mine: list[str] = []

    def ask() -> None:
        time.sleep(0.3)
        mine.append(kill_requests.request(str(tmp_path), "worker-0", signal.SIGKILL))

    threading.Thread(target=ask).start()
    wait_status = kill_requests.wait_for_replica(pid, str(tmp_path), "worker-0")
    assert os.WIFSIGNALED(wait_status) and os.WTERMSIG(wait_status) == signal.SIGKILL
    assert kill_requests.answered(mine[0], wait_s=0.1)  # taken: the backend's answer
    assert os.path.exists(other)  # another replica's request is left for its own task
    assert not kill_requests.answered(other, wait_s=0.2) and not os.path.exists(other)  # withdrawn


def test_a_replica_that_ends_by_itself_gives_its_own_exit(tmp_path):
    pid = _replica(0.2)
    wait_status = kill_requests.wait_for_replica(pid, str(tmp_path), "worker-0")
    assert os.WIFEXITED(wait_status) and os.WEXITSTATUS(wait_status) == 0
