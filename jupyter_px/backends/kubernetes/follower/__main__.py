"""`python -m jupyter_px.backends.kubernetes.follower RUN_DIR`: start one run's follower (its life as
a process is every follower's: `backends/follower_process.py`)."""

from __future__ import annotations

from ....runstore import RunNotFound, RunStore
from ... import follower_process
from ..shared.handle import FOLLOWER
from .follower import Follower
from .log_sink import RunGone


def main(argv: list[str] | None = None) -> int:
    return follower_process.main(argv, FOLLOWER, follow=_follow, gone=(RunGone, RunNotFound, FileNotFoundError))


def _follow(store: RunStore, run_id: str) -> int:
    return Follower(store, run_id).run()


if __name__ == "__main__":
    follower_process.run_main(main)
