"""What `jupyter px render --backend ssh` prints: the placement and the ssh command of each
replica, as a submit would run them (the run directory named after the run, where the run store
would put it). Pure: the hosts are read from the settings; nothing is contacted or written."""

from __future__ import annotations

import re
import shlex
from typing import Any

from ...runstore.layout import runs_root
from ...topology import Topology
from ..base import BackendError, Rendered
from . import commands
from .entry_command import entry_words
from .plan import place, unsupported
from .settings import load_settings


def dry_run(topology: Topology, name: str) -> str:
    problem = unsupported(topology)
    if problem:
        raise BackendError(problem)
    settings = load_settings()
    hosts = settings.machines()
    placements = place(topology, hosts)
    slug = "-".join(part for part in re.split(r"[^a-z0-9]+", name.lower()) if part)[:40] or "run"
    run_dir = str(runs_root() / slug)
    lines = [
        f"# jupyter-px run {slug} on {len(hosts)} host{'s' if len(hosts) != 1 else ''} "
        f"(shared filesystem: {settings.shared_filesystem}; else copied to {settings.remote_dir}/{slug})",
        "# hosts: " + ", ".join(f"{h.name} slots={h.slots}" for h in hosts),
    ]
    for p in placements:
        words = entry_words(settings, topology, run_dir, p.role, p.index)
        lines += ["", f"# {p.key}: {p.host}, slot {p.slot}", shlex.join(commands.ssh_argv(settings, p.host, words))]
    return "\n".join(lines) + "\n"


def rendered(topology: Topology, code: Any, *, name: str, **options: Any) -> Rendered:
    """The backend row's `render`: the commands, as text (no objects)."""
    return Rendered("ssh", [], dry_run(topology, name), [])
