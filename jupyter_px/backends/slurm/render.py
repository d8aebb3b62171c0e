"""The batch script a topology would submit, for `jupyter px render --backend slurm` and the REST
API's dry run: the same text submit writes, for a run directory named after the run (where the
run store would put it). Pure: nothing is contacted or written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...runstore.layout import runs_root
from ...topology import Topology
from ...topology.export import headline
from ..base import BackendError, Rendered
from .plan import job_plan, unsupported
from .script import rendered_text
from .settings import load_settings


def dry_run(topology: Topology, name: str) -> str:
    """The batch script (then the per-task script, as comments) of a run called `name`."""
    problem = unsupported(topology)
    if problem:
        raise BackendError(problem)
    settings = load_settings()
    root = Path(settings.shared_dir) / "runs" if settings.shared_dir else runs_root()
    slug = "-".join(part for part in re.split(r"[^a-z0-9]+", name.lower()) if part)[:40] or "run"
    return rendered_text(slug, root / slug, job_plan(topology), settings, headline(topology))


def rendered(topology: Topology, code: Any, *, name: str, **options: Any) -> Rendered:
    """The backend row's `render`: the batch script, as text (no objects)."""
    return Rendered("slurm", [], dry_run(topology, name), [])
