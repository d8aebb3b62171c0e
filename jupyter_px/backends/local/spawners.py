"""How the supervisor starts a replica's process: exec'd cold, or forked warm from its zygote.

Either way the replica is the supervisor's own child in a process group of its own, its
parent-death signal armed against the supervisor, pinned to its cores, inside the run's cgroup,
stdin from /dev/null, stdout+stderr appended to its log; and it runs the runner's `main()`. The
supervisor treats both alike (`Spawned`: a pid, reaped with `os.waitpid`).

A supervisor forked from a template (`jupyter_px.backends.local.warm`) was given a zygote
(`jupyter_px.forkserver.zygote`): replicas that run the runner are forked from it; anything else
(MPI's `mpirun`) is exec'd as always. If the zygote is gone, the replica is started cold and the
log says so once. A supervisor of a framework a fork cannot carry (TensorFlow) was given a
spawn-ahead pool instead (`jupyter_px.forkserver.pool`): each replica that runs the runner is
handed to one of its interpreters whose environment at import is the replica's
(`spawn_ahead.wanted_env`), the others start cold, each saying why (`Spawned.how`); what the
pool still holds once the gang has started is killed (`finish_gang`), and the run leaves the hint
that sizes the next pool.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...forkserver.pool import Pool
from ...forkserver.zygote import Zygote, ZygoteGone
from ...processes.ports import PortReservation
from ...runstore import RunPaths
from . import spawn_ahead
from .cgroups import RunCgroup
from .launcher import RUNNER_MODULE, Launch, LaunchPlan
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
    #: How it started, for its status: "cold", "forked (zygote pid N)", "spawn-ahead (...)", "cold: why".
    how: str = "cold"

    @property
    def pid(self) -> int:
        return self.process.pid


class Spawner:
    """Cold unless a zygote was given; `close()` lets the zygote go."""

    def __init__(self, zygote: Zygote | None = None, pool: Pool | None = None):
        self.zygote = zygote
        self.pool = pool
        #: The script's pool facts (optional imports, what it sets before its import), read once.
        self.facts: tuple[list[str], list[spawn_ahead.Preset]] | None = None
        #: Each runner replica's environment at import, in start order (the next pool's hint).
        self.wanted: list[dict[str, str]] = []
        self.pool_served = 0
        self.reported = False
        self.pool_refused: list[str] = []

    @classmethod
    def for_this_process(cls) -> Spawner:
        spawner = cls(Zygote.from_environ(), Pool.from_environ())
        if spawner.zygote is not None:
            log.info("warm: replicas are forked from the template's zygote (pid %s)", spawner.zygote_pid)
        if spawner.pool is not None:
            log.info("warm: a spawn-ahead pool of %d interpreters", spawner.pool.size)
        return spawner

    @property
    def warm(self) -> bool:
        return self.zygote is not None or self.pool is not None

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
        spawned: dict[int, Spawned] = {}
        refused: dict[int, str] = {}
        for i, start in enumerate(starts):
            if start[0].argv[:3] == runner and self.facts is not None:
                self.wanted.append(spawn_ahead.wanted_env(start[0].env, self.facts[1]))
                found = self._from_pool(start, self.wanted[-1])
                if isinstance(found, Spawned):
                    spawned[i] = found
                elif found:
                    refused[i] = found
        forkable = [
            i
            for i, start in enumerate(starts)
            if i not in spawned and self.zygote is not None and start[0].argv[:3] == runner
        ]
        for at in range(0, len(forkable), FORK_BATCH):
            if self.zygote is None:
                break
            batch = forkable[at : at + FORK_BATCH]
            try:
                for i, forked in zip(
                    batch, self.zygote.spawn_many([self._request(*starts[i]) for i in batch]), strict=True
                ):
                    how = f"forked (zygote pid {self.zygote_pid})"
                    spawned[i] = Spawned(ForkedProcess(forked.pid), forked.inherited_mib, warm=True, how=how)
            except ZygoteGone as error:
                log.warning("the zygote cannot fork (%s); this and later replicas start cold", error)
                self.close()
            between()
        for i, (launch, log_path, cpus, cgroup_procs) in enumerate(starts):
            if i not in spawned:
                process = spawn(launch.argv, launch.env, launch.cwd, log_path, cpus, cgroup_procs)
                spawned[i] = Spawned(process, how=f"cold: {refused[i]}" if i in refused else "cold")
                between()
        return [spawned[i] for i in range(len(starts))]

    def _from_pool(self, start: Start, wanted: dict[str, str]) -> Spawned | str | None:
        """The replica handed to a pool interpreter that imported with `wanted`; else why not
        (None: there is no pool)."""
        if self.pool is None:
            return None
        member = self.pool.take(wanted, self._request(*start)) if self.pool.members else None
        if member is None:
            differ = self.pool.differences(wanted)
            why = spawn_ahead.differs(differ) if differ else "no pool interpreter was alive"
            if not self.pool.members and not self.pool_served and not self.pool_refused:
                why = "the spawn-ahead pool was empty (the last run of this template sizes it)"
            elif not self.pool.members and not differ:
                why = "the spawn-ahead pool had no interpreter left (it is sized by the last run)"
            self.pool_refused.append(why)
            return why
        self.pool_served += 1
        return Spawned(ForkedProcess(member.pid), warm=True, how=f"spawn-ahead (pool interpreter pid {member.pid})")

    def finish_gang(self, framework: str | None) -> str | None:
        """After the gang's first start: kill what the pool still holds, leave the next pool's
        hint; what to add to the run's `launch` (None without a pool)."""
        if self.facts is not None and not self.reported:  # the first start's gang (an attempt restarts it)
            spawn_ahead.report(framework, self.wanted, self.facts[0])
            self.reported = True
        if self.pool is None:
            return None
        left = self.pool.release()
        total = len(self.wanted)
        said = f"spawn-ahead: {self.pool_served} of {total} replicas from its pool"
        if self.pool_refused:
            said += f", the others cold ({self.pool_refused[0]})"
        if left:
            log.info("released %d unused pool interpreters: %s", len(left), left)
        self.pool = None
        return said

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
        if self.facts is None and plan is not None and plan.topology.framework in spawn_ahead.POOL_PRELOAD:
            entrypoint = paths.code_dir / plan.record.code.entrypoint
            self.facts = spawn_ahead.script_facts(entrypoint, plan.topology.framework)
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
