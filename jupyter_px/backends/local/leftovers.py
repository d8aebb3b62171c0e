"""What the supervisor kills before a run's final status: nothing of the run may be left running.

Three sweeps, after the replicas' groups are gone: every process the supervisor adopted as the
child subreaper (a daemon that left its replica's session, whatever its environment), anything
else carrying the run's PX_RUN_ID (adopted by a subreaper of its own), and the run's cgroup.
The owner of another run (its supervisor or follower, started from inside a replica) is not this
run's and is spared: see `owns_another_run`.

psutil is imported where it is used: the supervisor's start-up path stays light.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from ...processes import detached
from ...runstore import RunStatus
from .process import run_processes

log = logging.getLogger(__name__)


def kill_adopted(keep: Callable[[], Collection[int]], reap: Callable[[], None], timeout: float = 10.0) -> None:
    """Kill every process we adopted as the child subreaper: whatever a replica left behind
    (a daemon that called setsid and double-forked, whatever its environment). Killing one
    can orphan its own children onto us, so this repeats until none is left. `keep()` names the
    children that are ours to keep (the watchdog, replicas not yet reaped); `reap()` collects
    the killed ones. The owner of another run is left alone: see `owns_another_run`."""
    import psutil

    me = psutil.Process()
    deadline = time.monotonic() + timeout
    spared: set[int] = set()
    while time.monotonic() < deadline:
        strays = []
        kept = keep()
        for child in me.children():
            if child.pid in kept or child.pid in spared:
                continue
            try:
                if child.status() == psutil.STATUS_ZOMBIE:
                    continue
                if owns_another_run(child):
                    spared.add(child.pid)
                    continue
                strays.append(child)
            except psutil.Error:
                continue
        if not strays:
            return
        for proc in strays:
            try:
                log.info("killing adopted process %d (%s)", proc.pid, proc.name())
                proc.kill()
            except psutil.Error:
                pass
        time.sleep(0.01)
        reap()
    log.warning("adopted processes still alive after %g s", timeout)


def kill_leftovers(run_id: str, exclude: list[int]) -> None:
    """Whatever still carries the run's PX_RUN_ID does not outlive the run, even where it is
    not our child (adopted by a subreaper of its own)."""
    import psutil

    for proc in run_processes(run_id, exclude=exclude):
        try:
            log.info("killing leftover process %d (%s)", proc.pid, proc.name())
            proc.kill()
        except psutil.Error:
            pass


def spare(pid: int) -> bool:
    """Whether a process in the run's cgroup is the owner of another run (see below)."""
    import psutil

    try:
        return owns_another_run(psutil.Process(pid))
    except psutil.Error:
        return False


def owns_another_run(proc: Any) -> bool:
    """Is `proc` the recorded owner of the run in its working directory (helpers are started
    there)? By identity, pid and creation time, which its starter records before it may run: so
    a run submitted from inside a replica keeps its supervisor from its first moment on, and no
    other process passes for one by its command line."""
    import psutil

    try:
        status = RunStatus.model_validate_json((Path(proc.cwd()) / "status.json").read_bytes())
        identity = detached.ProcessIdentity.of(proc.pid)
    except (OSError, ValueError, psutil.Error):
        return False
    owner = status.owner
    return owner is not None and detached.ProcessIdentity(owner.pid, owner.started_at).same_as(identity)
