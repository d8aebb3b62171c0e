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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...forkserver.zygote import Zygote, ZygoteGone
from ...runstore import RunPaths
from .cgroups import RunCgroup
from .launcher import RUNNER_MODULE, Launch, LaunchPlan
from .ports import PortReservation
from .process import spawn
from .replica import ForkedProcess, Replica

log = logging.getLogger(__name__)

_RUNNER_FILE = Path(__file__).resolve().parents[2] / "runner.py"

#: The signal a replica gets when its supervisor dies (as `process._ChildSetup` arms it for a
#: cold start, so both starts end the same way: SIGTERM, so that it flushes what it holds; the
#: leak test in tests/test_warm.py compares the two).
PARENT_DEATH_SIGNAL = signal.SIGTERM


#: Replicas requested from the zygote at once (a wide run is requested in batches).
FORK_BATCH = 32

#: What starting one replica takes: its launch, its log, its cores, the run's cgroup.
Start = tuple[Launch, Path, Iterable[int] | None, str | None]


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
        spawner = cls(Zygote.from_environ())
        if spawner.zygote is not None:
            log.info("warm: replicas are forked from the template's zygote (pid %s)", spawner.zygote_pid)
        return spawner

    @property
    def warm(self) -> bool:
        return self.zygote is not None

    @property
    def zygote_pid(self) -> int | None:
        return self.zygote.pid if self.zygote is not None else None

    def spawn_all(self, starts: Sequence[Start], between: Callable[[], None] = lambda: None) -> list[Spawned]:
        """Start each (launch, log, cores, cgroup): the runner's forked from the zygote, requested
        FORK_BATCH at a time before any is waited for; the rest (or all, without a zygote)
        exec'd. `between()` runs after each batch of forks and after each exec (the supervisor's
        heartbeat: 256 cold starts on a loaded machine took over 30 s, and a supervisor silent
        that long is judged hung)."""
        runner = [sys.executable, "-m", RUNNER_MODULE]
        forkable = [i for i, start in enumerate(starts) if self.zygote is not None and start[0].argv[:3] == runner]
        spawned: dict[int, Spawned] = {}
        for at in range(0, len(forkable), FORK_BATCH):
            if self.zygote is None:
                break
            batch = forkable[at : at + FORK_BATCH]
            try:
                for i, forked in zip(
                    batch, self.zygote.spawn_many([self._request(*starts[i]) for i in batch]), strict=True
                ):
                    spawned[i] = Spawned(ForkedProcess(forked.pid), forked.inherited_mib, warm=True)
            except ZygoteGone as error:
                log.warning("the zygote cannot fork (%s); this and later replicas start cold", error)
                self.close()
            between()
        for i, (launch, log_path, cpus, cgroup_procs) in enumerate(starts):
            if i not in spawned:
                spawned[i] = Spawned(spawn(launch.argv, launch.env, launch.cwd, log_path, cpus, cgroup_procs))
                between()
        return [spawned[i] for i in range(len(starts))]

    def start(
        self,
        replicas: Sequence[Replica],
        plan: LaunchPlan | None,
        paths: RunPaths,
        ports: PortReservation | None,
        cgroup: RunCgroup | None,
        between: Callable[[], None] = lambda: None,
    ) -> list[tuple[Spawned, Launch]]:
        """Start these replicas of the run (`replica_starts`, `spawn_all`): each one's process
        and launch, in order."""
        starts = replica_starts(replicas, plan, paths, ports, cgroup)
        return [(spawned, start[0]) for spawned, start in zip(self.spawn_all(starts, between), starts, strict=True)]

    @staticmethod
    def _request(launch: Launch, log_path: Path, cpus: Iterable[int] | None, cgroup_procs: str | None) -> dict:
        return Zygote.request(
            f"{RUNNER_MODULE}:main",
            launch.argv[3:],
            argv0=str(_RUNNER_FILE),
            env=launch.env,
            cwd=launch.cwd,
            log_path=str(log_path),
            cpus=list(cpus) if cpus else None,
            cgroup_procs=cgroup_procs,
            parent_death_signal=PARENT_DEATH_SIGNAL,
            subreaper=True,  # as process._ChildSetup makes a cold one
        )

    def close(self) -> int:
        """Let the zygote go (it exits); its pid (0: none), still to be reaped."""
        pid = self.zygote_pid or 0
        if self.zygote is not None:
            self.zygote.close()
            self.zygote = None
        return pid


def replica_starts(
    replicas: Sequence[Replica],
    plan: LaunchPlan | None,
    paths: RunPaths,
    ports: PortReservation | None,
    cgroup: RunCgroup | None,
) -> list[Start]:
    """What starting each replica takes. Its port is released for it to bind, and its folders
    are made here, by the supervisor: a replica must never make a deleted run's directory again."""
    assert plan is not None and ports is not None  # (the run is prepared)
    paths.logs_dir.mkdir(exist_ok=True)
    starts: list[Start] = []
    for replica in replicas:
        if replica.port is not None:
            ports.release_socket(replica.port)
        spec = replica.spec
        paths.tensorboard(spec.role, spec.index).mkdir(exist_ok=True)
        procs = cgroup.procs_file if cgroup else None
        starts.append((plan.launch(spec), paths.log(spec.role, spec.index), plan.affinity(spec), procs))
    return starts
