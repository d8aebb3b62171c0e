"""An SSH run's stacks (`jupyter_px.diagnostics`): asked on each host, over its ssh connection.

Each replica arms its stacks signal and writes its dumps, with its pid beside (`<key>.pid`), in
its run directory's `stacks/dumps` on its host (`PX_STACKS_DIR`, which the follower sets: the
run store's own folder where the host shares it, else the host's copy of the run). So the stacks
are asked for where the processes are, as on a Kubernetes pod: `ssh HOST -- python -m
jupyter_px.diagnostics.stack_request DIR` signals every armed process of the run on that host
and prints what each dump added. Every host is asked at once, on the run's shared connection;
the answers become one snapshot kept in the run directory, with the frames a host saw under its
copy of the run read as the run's own code here. Asked for by `jupyter px stacks`
(`SshBackend.stacks`) and by the follower when a stall begins or a collective times out.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...diagnostics import taking
from ...diagnostics.dump_collect import WAIT_S
from ...diagnostics.stack_signal import DUMPS_DIR, STACKS_DIR
from ..base import BackendError
from . import commands
from .handle import HostsHandle
from .settings import SshSettings

#: A host that has not answered by then (the dumps' own wait, plus ssh's) is given up.
ASK_TIMEOUT_S = WAIT_S + 20.0


def dumps_dir(remote: str) -> str:
    """Where the replicas of a run whose directory is `remote` on their host write their dumps."""
    return f"{remote}/{STACKS_DIR}/{DUMPS_DIR}"


def _ask(settings: SshSettings, host: str, remote: str) -> dict[str, Any]:
    """One host's answer (`stack_request.py`'s JSON), or `{"failed": why}`."""
    words = [settings.interpreter, "-m", "jupyter_px.diagnostics.stack_request", dumps_dir(remote)]
    try:
        done = commands.run(settings, host, commands.with_setup(settings, words), timeout=ASK_TIMEOUT_S)
    except BackendError as error:
        return {"failed": str(error)}
    try:
        return json.loads(done.stdout)
    except ValueError:
        return {"failed": f"{host} gave no stacks: {commands.said(done)}"}


def take_stacks(
    settings: SshSettings,
    handle: HostsHandle,
    remote: Mapping[str, str],
    run_dir: Path,
    run_id: str,
    targets: Mapping[str, int | None],
    why: str = "on request",
) -> dict[str, Any]:
    """Ask every host with a replica in `targets` (key -> pid) for its replicas' stacks; the
    snapshot, kept in the run directory. `remote`: each host's run directory (the follower's)."""
    taken_at = time.time()
    hosts = sorted({host for role, index, host in handle.replicas if f"{role}-{index}" in targets and host in remote})
    nobody = "no stack: no host answered for it" if remote else "no stack: the run's hosts are still being prepared"
    texts, errors = taking.ask_all(hosts, lambda host: _ask(settings, host, remote[host]), targets, nobody)
    copies = {path for path in remote.values() if path != str(run_dir.resolve())}
    return taking.keep_snapshot(
        run_dir.resolve(),
        run_id,
        targets,
        texts,
        errors,
        why=why,
        taken_at=taken_at,
        moved_from=next(iter(copies), None),  # every host's copy is at the same path (`remote_run_dir`)
    )
