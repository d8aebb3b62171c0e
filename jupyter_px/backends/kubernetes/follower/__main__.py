"""`python -m jupyter_px.backends.kubernetes.follower RUN_DIR`: start one run's follower."""

from __future__ import annotations

import fcntl
import logging
import sys
from pathlib import Path

from .... import detached
from ....runstore import RunNotFound, RunStore
from ....runstore.layout import runs_root
from ..handle import FOLLOWER_DIR
from .follower import Follower
from .log_sink import RunGone

log = logging.getLogger("jupyter_px.backends.kubernetes.follower")


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m jupyter_px.backends.kubernetes.follower RUN_DIR", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    run_dir = Path(args[0]).resolve()
    home = run_dir.parent.parent
    if runs_root(home) != run_dir.parent:
        print(f"{run_dir} is not a run directory", file=sys.stderr)
        return 2
    store = RunStore(home)
    if not detached.await_go():
        log.info("the start of this follower of %s was abandoned; nothing followed", run_dir.name)
        return 0
    try:
        if not store.paths(run_dir.name).record.exists():
            log.warning("%s is gone: nothing to follow", run_dir)
            return 0
        (run_dir / FOLLOWER_DIR).mkdir(exist_ok=True)
        with open(run_dir / FOLLOWER_DIR / ".lock", "a+") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                log.info("another follower already follows %s", run_dir.name)
                return 0
            return Follower(store, run_dir.name).run()
    except (RunGone, RunNotFound, FileNotFoundError):
        if store.paths(run_dir.name).record.exists():
            raise
        log.warning("%s is gone: the follower ends", run_dir)
        return 0


if __name__ == "__main__":
    try:
        exit_code = main()
    except BaseException:  # a crash: say why in follower.log, then leave
        import traceback

        traceback.print_exc()
        exit_code = 1
    logging.shutdown()
    detached.exit_now(exit_code)  # the watch and log threads are daemons, maybe inside a write
