"""The life of a per-run follower process (`python -m <backend>.follower RUN_DIR`), whatever it
follows: what the Kubernetes and Slurm followers share (`followed.py` is the starting side).

1. its argument is a run directory of a run store (`<home>/runs/<id>`), or it refuses (exit 2);
2. it waits for its starter's "go" (`jupyter_px.processes.detached`): the starter records it as the run's
   owner first, and an abandoned start follows nothing;
3. a run whose directory is gone, or that has finished, is not followed;
4. the follower lock (`FollowerSpec.lock`) admits one follower per run: a second one exits 0;
5. the backend's follower runs until the run ends; a run directory deleted under it ends it
   quietly (the backend names the errors that mean so: `gone`);
6. `run_main` ends the process: a crash's traceback goes to the follower's log, and the exit is
   immediate (`detached.exit_now`: watch and log threads are daemons, maybe inside a write).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path

from ..processes import detached, file_lock
from ..runstore import RunStore
from ..runstore.layout import runs_root
from .followed import FollowerSpec

log = logging.getLogger(__name__)


def main(
    argv: list[str] | None,
    spec: FollowerSpec,
    *,
    follow: Callable[[RunStore, str], int],
    gone: tuple[type[BaseException], ...] = (),
) -> int:
    """Follow the run named by `argv` (`[RUN_DIR]`) with `follow(store, run_id)`; the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print(f"usage: python -m {spec.module} RUN_DIR", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    run_dir = Path(args[0]).resolve()
    home = run_dir.parent.parent
    if runs_root(home) != run_dir.parent:
        print(f"{run_dir} is not a run directory", file=sys.stderr)
        return 2
    store = RunStore(home)
    run_id = run_dir.name
    if not detached.await_go():
        log.info("the start of this follower of %s was abandoned; nothing followed", run_id)
        return 0
    try:
        if not store.paths(run_id).record.exists():
            log.warning("%s is gone: nothing to follow", run_dir)
            return 0
        with file_lock.locked(run_dir / spec.lock, timeout=0) as held:
            if not held:
                log.info("another follower already follows %s", run_id)
                return 0
            if store.status(run_id).state.finished:
                return 0
            return follow(store, run_id)
    except gone:
        if store.paths(run_id).record.exists():
            raise
        log.warning("%s is gone: the follower ends", run_dir)
        return 0


def run_main(main: Callable[[], int]) -> None:
    """The `if __name__ == "__main__"` of a follower: run, say why a crash happened, leave now."""
    try:
        exit_code = main()
    except BaseException:  # a crash: say why in the follower's log, then leave
        import traceback

        traceback.print_exc()
        exit_code = 1
    logging.shutdown()
    detached.exit_now(exit_code)
