"""`python -m jupyter_px.backends.kubernetes.follower RUN_DIR`: start one run's follower (its life as
a process is every follower's: `backends/follower_process.py`).

The official client's package imports `kubernetes_validate` whenever it is installed, for its
dynamic client's `validate` (kubernetes `dynamic/client.py`), which no follower calls; that pulls
in jsonschema and rfc3987-syntax, whose grammar is built at import: 3.3 s of a 4 s start on a
loaded core, in every run's follower. This process runs no one else's code, so it declines that
import before the client is loaded (a `None` in `sys.modules` makes the import an ImportError,
which the client takes as "not installed")."""

from __future__ import annotations

import sys

from ....runstore import RunNotFound, RunStore
from ... import follower_process


def main(argv: list[str] | None = None) -> int:
    sys.modules.setdefault("kubernetes_validate", None)  # type: ignore[arg-type]
    # the official client's first imports: after the line above
    from ..shared.handle import FOLLOWER
    from .log_sink import RunGone

    return follower_process.main(argv, FOLLOWER, follow=_follow, gone=(RunGone, RunNotFound, FileNotFoundError))


def _follow(store: RunStore, run_id: str) -> int:
    from .follower import Follower

    return Follower(store, run_id).run()


if __name__ == "__main__":
    follower_process.run_main(main)
