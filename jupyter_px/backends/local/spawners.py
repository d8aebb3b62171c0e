"""How the supervisor starts a replica's process: exec'd cold, or forked warm from its zygote.

Either way the replica is the supervisor's own child in a process group of its own, its
parent-death signal armed against the supervisor, pinned to its cores, inside the run's cgroup,
stdin from /dev/null, stdout+stderr appended to its log; and it runs the runner's `main()`. The
supervisor treats both alike (`Spawned`: a pid, reaped with `os.waitpid`).

A supervisor forked from a template (`jupyter_px.backends.local.warm`) was given a zygote
(`jupyter_px.forkserver.zygote`): replicas that run the runner are forked from it; anything else
(MPI's `mpirun`) is exec'd as always. If the zygote is gone, the replica is started cold and the
log says so once.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ...forkserver.zygote import Zygote, ZygoteGone
from .launcher import RUNNER_MODULE, Launch
from .process import spawn

log = logging.getLogger(__name__)

_RUNNER_FILE = Path(__file__).resolve().parents[2] / "runner.py"

#: The signal a replica gets when its supervisor dies (as `process._ChildSetup` arms it for a
#: cold start, so both starts end the same way).
PARENT_DEATH_SIGNAL = signal.SIGKILL


@dataclass
class ForkedProcess:
    """A replica forked from the zygote: what the supervisor needs of a `Popen` (it reaps it)."""

    pid: int
    returncode: int | None = None


@dataclass(frozen=True)
class Spawned:
    process: subprocess.Popen | ForkedProcess
    #: Resident memory it shares with the template (MiB): the template's, not charged to its limit.
    inherited_mib: float = 0.0
    warm: bool = False

    @property
    def pid(self) -> int:
        return self.process.pid


class Spawner:
    """Cold unless a zygote was given; `close()` lets the zygote go."""

    def __init__(self, zygote: Zygote | None = None):
        self.zygote = zygote

    @classmethod
    def for_this_process(cls) -> Spawner:
        return cls(Zygote.from_environ())

    @property
    def warm(self) -> bool:
        return self.zygote is not None

    @property
    def zygote_pid(self) -> int | None:
        return self.zygote.pid if self.zygote is not None else None

    def spawn(self, launch: Launch, log_path: Path, cpus: Iterable[int] | None, cgroup_procs: str | None) -> Spawned:
        runner = [sys.executable, "-m", RUNNER_MODULE]
        if self.zygote is not None and launch.argv[:3] == runner:
            try:
                forked = self.zygote.spawn(
                    f"{RUNNER_MODULE}:main",
                    launch.argv[3:],
                    argv0=str(_RUNNER_FILE),
                    env=launch.env,
                    cwd=launch.cwd,
                    log_path=str(log_path),
                    cpus=list(cpus) if cpus else None,
                    cgroup_procs=cgroup_procs,
                    parent_death_signal=PARENT_DEATH_SIGNAL,
                )
                return Spawned(ForkedProcess(forked.pid), forked.inherited_mib, warm=True)
            except ZygoteGone as error:
                log.warning("the zygote cannot fork (%s); this and later replicas start cold", error)
                self.close()
        return Spawned(spawn(launch.argv, launch.env, launch.cwd, log_path, cpus, cgroup_procs))

    def close(self) -> None:
        if self.zygote is not None:
            self.zygote.close()
            self.zygote = None
