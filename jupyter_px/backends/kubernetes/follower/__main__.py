"""`python -m jupyter_px.backends.kubernetes.follower RUN_DIR`: start one run's follower."""

from __future__ import annotations

import logging

from .... import detached
from .follower import main

if __name__ == "__main__":
    try:
        exit_code = main()
    except BaseException:  # a crash: say why in follower.log, then leave
        import traceback

        traceback.print_exc()
        exit_code = 1
    logging.shutdown()
    detached.exit_now(exit_code)  # the watch and log threads are daemons, maybe inside a write
