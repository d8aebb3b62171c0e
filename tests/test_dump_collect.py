"""Reading a replica's stack dump whole: faulthandler writes the main thread's block last, and a
process descheduled mid-dump on a loaded machine stops writing for a while. A dump read then ended
in a helper thread's block, which was taken for the main thread (ci65: a sleeping rank summarised
as "wait (threading.py)")."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from jupyter_px.diagnostics.dump_collect import collect, whole
from jupyter_px.diagnostics.stack_signal import STACKS_SIGNAL

#: A process with a helper thread dumps every thread's stack, as a replica's armed signal does.
DUMPS = """
import faulthandler, sys, threading, time
threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
def wait_here():
    faulthandler.dump_traceback(sys.stdout, all_threads=True)
wait_here()
"""


def _dump(tmp_path: Path, as_module: bool) -> str:
    script = tmp_path / "dumps_now.py"
    script.write_text(DUMPS)
    argv = [sys.executable, "-m", "dumps_now"] if as_module else [sys.executable, str(script)]
    return subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=True).stdout


def test_a_dump_is_whole_once_the_main_threads_block_is_written(tmp_path):
    for as_module in (False, True):  # outermost: the script's <module>, or runpy's under -m
        text = _dump(tmp_path, as_module)
        assert whole(text), text
        helper, main = text.split("\n\n")
        assert "in _bootstrap" in helper and "wait_here" in main
        assert not whole(helper + "\n")  # cut between the blocks
        assert not whole(text[: text.index("wait_here") + len("wait_here")] + "\n")  # cut inside main's


def test_collect_waits_out_a_pause_mid_dump_and_reads_it_whole(tmp_path):
    text = _dump(tmp_path, as_module=False)
    helper, main = text.split("\n\n")
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    target = dumps / "worker-1.txt"
    target.write_text("an earlier dump\n")

    def writes_with_a_pause() -> None:
        with open(target, "a") as handle:
            handle.write(helper + "\n\n")
            handle.flush()
            time.sleep(0.4)  # descheduled: longer than the collector's poll
            handle.write(main)

    def send(pid: int, signum: int) -> None:
        assert (pid, signum) == (4242, STACKS_SIGNAL)
        threading.Thread(target=writes_with_a_pause).start()

    texts, errors = collect(dumps, {"worker-1": 4242}, send, wait_s=5)
    assert errors == {} and texts["worker-1"] == text


def test_a_dump_that_never_ends_whole_is_still_read_at_the_deadline(tmp_path):
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    target = dumps / "worker-0.txt"
    partial = 'Thread 0x00007f0000000001 (most recent call first):\n  File "x.py", line 3 in helper\n'
    texts, errors = collect(dumps, {"worker-0": 7}, lambda pid, signum: target.write_text(partial), wait_s=0.5)
    assert errors == {} and texts["worker-0"] == partial
