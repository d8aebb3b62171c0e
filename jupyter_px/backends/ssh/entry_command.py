"""The command each replica's entry runs with on its host: the interpreter, the entry, the run
directory there and the replica, and, where the run's framework can start warm (PyTorch, or no
framework: `backends/preload.py`), `--warm PRELOAD IDLE_S [DIR]` for the host's template
(`task_entry.py` and `host_template.py` say what they do). The follower runs it; `jupyter px
render --backend ssh` shows it."""

from __future__ import annotations

from ...topology import Topology
from ..preload import BASE_PRELOAD, COLD_FRAMEWORKS, FRAMEWORK_PRELOAD, POOL_PRELOAD
from . import commands
from .handle import ENTRY
from .settings import SshSettings


def warm_preload(settings: SshSettings, topology: Topology) -> tuple[str, ...] | None:
    """What a host's template imports for this run, or None: its replicas start cold (warm off
    in the settings; a framework a fork cannot carry; several processes per replica)."""
    framework = topology.framework
    if not settings.warm or framework in COLD_FRAMEWORKS or framework in POOL_PRELOAD:
        return None
    if framework not in FRAMEWORK_PRELOAD or (topology.environment.processes_per_replica or 1) > 1:
        return None
    return (*BASE_PRELOAD, *FRAMEWORK_PRELOAD[framework])


def entry_words(settings: SshSettings, topology: Topology, run_dir: str, role: str, index: int) -> list[str]:
    """The entry's command (after the settings' `setup` lines), as words."""
    words = [settings.interpreter, f"{run_dir}/{ENTRY}", run_dir, role, str(index)]
    preload = warm_preload(settings, topology)
    if preload is not None:
        words += ["--warm", ",".join(preload), f"{settings.warm_idle_s:g}"]
        words += [settings.warm_dir] if settings.warm_dir else []
    return commands.with_setup(settings, words)
