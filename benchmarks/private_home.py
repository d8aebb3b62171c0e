"""The environment a benchmark's `jupyter px` commands run in: a run store and warm templates of
their own under the benchmark's folder (never the user's), this checkout first on the path, and no
`JUPYTER_PX_WARM` the user set (each benchmark says warm or cold itself)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def private_environ(work: Path, **extra: str) -> dict[str, str]:
    """This process's environment with `PX_HOME` and the warm templates' folder under `work`."""
    path = [str(ROOT), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    env = dict(
        os.environ,
        PX_HOME=str(work / "px_home"),
        JUPYTER_PX_WARM_DIR=str(work / "warm"),
        PYTHONPATH=os.pathsep.join(path),
        **extra,
    )
    env.pop("JUPYTER_PX_WARM", None)
    return env
