"""The supervisor's spawner keeps its heartbeat while it starts a wide run."""

from __future__ import annotations

import os
import sys

from jupyter_px.backends.local.launcher import Launch
from jupyter_px.backends.local.spawners import Spawner


def test_cold_starts_give_the_heartbeat_a_turn_after_each_exec(tmp_path):
    """256 cold starts on a loaded machine once took over 30 s with no status write in between,
    and the run was judged hung (SupervisorLost): `between` runs after every exec."""
    launch = Launch([sys.executable, "-c", "pass"], dict(os.environ), str(tmp_path))
    turns: list[int] = []
    spawned = Spawner().spawn_all(
        [(launch, tmp_path / f"{i}.log", None, None) for i in range(5)], between=lambda: turns.append(len(turns))
    )
    for one in spawned:
        assert os.waitpid(one.pid, 0)[1] == 0
    assert len(turns) == 5 and not any(one.warm for one in spawned)
