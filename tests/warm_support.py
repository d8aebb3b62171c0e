"""Warm and cold starts for the local-backend tests: the `launch` fixture (conftest.py) runs a test
once cold and once warm, the warm round through templates started once per session."""

from __future__ import annotations

import os
from pathlib import Path

from jupyter_px.backends.local import launcher, warm
from jupyter_px.backends.local.settings import load_settings
from jupyter_px.runstore import RunStore

#: The frameworks whose templates a warm round needs ready (the tests' topologies use these).
FRAMEWORKS = ("pytorch", None)

#: Why a run may start cold in a warm round: what no template can run.
COLD_BY_DESIGN = (
    *warm.COLD_FRAMEWORKS.values(),
    "processes_per_replica > 1",
    "submitted from inside run",
    "asked for (--cold)",
)


def template_env() -> dict[str, str]:
    """The environment a submit from this process gives a template (its fingerprint's input)."""
    home = Path(os.environ.get("PX_HOME") or Path.home() / ".jupyter_px")
    return {**launcher.clean_environ(home), "PYTHONUNBUFFERED": "1"}


def ensure_templates() -> None:
    """Every template a warm round needs, ready (started or kept: a fingerprint that changed,
    say by an edit of this package, starts a new one)."""
    for framework in FRAMEWORKS:
        warm.start(framework, template_env(), load_settings(), timeout=300)


def templates_before_a_server() -> None:
    """This session's templates, started by the test process before a Jupyter server starts: a
    template a server's kernel starts belongs to that server and ends with it (as a user's does),
    so the next warm test started it again, some ten times a suite run at 7-13 s each. One the
    session started is detached, and the kernels' runs fork from it as the tests' own do."""
    if os.environ.get("JUPYTER_PX_WARM", "1") != "0":
        ensure_templates()


def assert_started_warm(home: Path) -> None:
    """Every run in the store started warm, or cold for a reason no template could change."""
    store = RunStore(home)
    wrong = []
    for run_id in store.run_ids():
        try:
            launch = store.status(run_id).launch or ""
        except Exception:
            continue
        if launch.startswith("warm") or any(reason in launch for reason in COLD_BY_DESIGN):
            continue
        wrong.append(f"{run_id}: {launch}")
    assert not wrong, "runs of a warm round that started cold: " + "; ".join(wrong)
