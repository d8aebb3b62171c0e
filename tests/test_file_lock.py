"""`file_lock`: one process at a time, and a lock that goes with the process holding it."""

from __future__ import annotations

import subprocess
import sys

from waiting import wait_for

from jupyter_px.processes import file_lock

HOLDER = """
import sys, time
from pathlib import Path
from jupyter_px.processes import file_lock
handle = file_lock.acquire(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(600)
"""


def test_a_lock_another_process_holds_times_out_and_is_taken_once_that_process_dies(tmp_path):
    path = tmp_path / "deep" / "run.lock"  # its folder is created
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with file_lock.locked(path, timeout=0.2) as held:
            assert not held
        assert file_lock.acquire(path, timeout=0) is None
    finally:
        holder.kill()
        holder.wait()
    # killed while holding it: nothing to clean up, the next one takes it
    handle = wait_for(lambda: file_lock.acquire(path, timeout=0), timeout=10, what="the dead holder's lock")
    handle.close()
    with file_lock.locked(path, timeout=1) as held:
        assert held
