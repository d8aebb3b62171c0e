"""`jupyter px kill RUN worker-1` on the SSH backend: one replica ended on purpose on its host.

Over the run's shared ssh connection to the replica's host, `processes/replica_kill.py` signals the
replica's process group (found by the pid it wrote beside its stack dumps, as `jupyter px stacks`
finds it; the host's entry made it a group leader), so it ends as on a crash or a lost host. The
entry reports the signal and the follower applies the run's policies: a failed replica fails the run.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...processes.replica_kill import answer_of
from ..base import BackendError
from . import commands
from .handle import HostsHandle
from .settings import SshSettings
from .stacks import dumps_dir

#: A host that has not answered by then is given up.
KILL_TIMEOUT_S = 30.0


def kill_replica(
    settings: SshSettings,
    handle: HostsHandle,
    remote: Mapping[str, str],
    run_id: str,
    role: str,
    index: int,
    signum: int,
) -> str:
    """Signal replica `role`-`index` on its host; what was done, in words. `remote`: each host's
    run directory (the follower's, once the hosts are prepared)."""
    key = f"{role}-{index}"
    host = next((h for r, i, h in handle.replicas if (r, i) == (role, index)), None)
    if host is None or host not in remote:
        raise BackendError(f"{key} of run {run_id} has not started on its host yet")
    words = [settings.interpreter, "-m", "jupyter_px.processes.replica_kill", dumps_dir(remote[host]), key, str(signum)]
    done = commands.run(settings, host, commands.with_setup(settings, words), timeout=KILL_TIMEOUT_S)
    answer = answer_of(done.stdout.decode("utf-8", "replace"))
    if answer is None:
        raise BackendError(f"{host}: the kill was not answered: {commands.said(done)}")
    if "pid" in answer:
        return f"sent {answer['signal']} to {key} of run {run_id} (on host {host}, pid {answer['pid']})"
    raise BackendError(f"{answer.get('failed') or answer.get('absent')} (host {host})")
