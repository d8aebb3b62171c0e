"""A child for tests/test_detached.py: `python -m detached_child ACTION [ARG]`, started by
`jupyter_px.processes.detached.start`."""

from __future__ import annotations

import os
import signal
import sys
import time

from jupyter_px.processes import detached


def main(argv: list[str]) -> int:
    if not detached.await_go():
        return 3
    action = argv[0]
    if action == "touch":
        with open(argv[1], "w") as handle:
            handle.write("\n".join(f"{k}={v}" for k, v in os.environ.items()))
        return 0
    if action == "sleep":
        time.sleep(600)
        return 0
    if action == "handle-term":
        stopped = []
        signal.signal(signal.SIGTERM, lambda *_: stopped.append(True))
        print("handler installed", flush=True)
        deadline = time.monotonic() + 600
        while not stopped and time.monotonic() < deadline:
            time.sleep(0.02)
        return 7
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
