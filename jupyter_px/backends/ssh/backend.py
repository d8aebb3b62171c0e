"""`SshBackend`: a run's replicas are processes on the hosts the user names, started over ssh.

A run owned by a detached follower (`backends/followed.py`), as Slurm's and Kubernetes' are. What
is its own: `check` reads the hosts (a hostfile or `hosts:`), places the replicas by slots and
asks each host once over ssh (it answers, the keys are accepted), before anything is recorded;
`submit` writes the plan, the entry every replica runs and the handle (`ssh.json`: hosts,
addresses, the settings), and starts the follower, which connects, ships and starts everything;
`stop` asks the follower (`ssh-stop`) and waits until every replica has ended on every host;
`stacks` asks each host for its replicas' stacks (`stacks.py`); `kill` ends one replica on its
host (`chaos.py`).
"""

from __future__ import annotations

import json
import secrets
import shutil
import time
from pathlib import Path
from typing import Any

from ...runstore import ReplicaState, RunStatus, atomic_write_json
from ...topology import Topology, parse_topology
from ..base import BackendError, SubmitHandle, replica_to_kill
from ..followed import FollowedBackend, mark_stopped
from . import commands, shipping
from .handle import ENTRY, FOLLOWER, PLAN_FILE, STARTED_FILE, HostsHandle
from .plan import place, plan_document, unsupported
from .settings import SshSettings, from_json, load_settings, to_json

#: Beyond the stop grace, how long `stop` waits for the follower to finish the run.
STOP_MARGIN_S = 30.0


class SshBackend(FollowedBackend[SshSettings]):
    """Replicas on your own machines over OpenSSH (the topology's `backend: ssh`)."""

    name = "ssh"
    follower = FOLLOWER

    def _load_settings(self) -> SshSettings:
        return load_settings()

    def check(self, topology: Topology) -> None:
        problem = unsupported(topology)
        if problem:
            raise BackendError(problem)
        hosts = self.settings.machines()
        placements = place(topology, hosts)
        for host in dict.fromkeys(p.host for p in placements):
            commands.check_reachable(self.settings, host)

    def submit(self, run_id: str) -> SubmitHandle:
        record = self.store.record(run_id)
        topology = parse_topology(record.topology)
        settings = self.settings
        hosts = settings.machines()
        placements = place(topology, hosts)
        run_dir = self.store.paths(run_id).root.resolve()
        (run_dir / "ssh").mkdir(exist_ok=True)
        atomic_write_json(run_dir / PLAN_FILE, plan_document(run_id, placements, hosts))
        shutil.copyfile(Path(__file__).with_name("task_entry.py"), run_dir / ENTRY)
        token = secrets.token_hex(8)
        atomic_write_json(run_dir / "ssh" / "token.json", {"token": token})
        (run_dir / shipping.probe_name(token)).write_text("")
        used = dict.fromkeys(p.host for p in placements)
        given = {h.name: h.address for h in hosts}
        handle = HostsHandle(
            submitted_at=time.time(),
            replicas=[(p.role, p.index, p.host) for p in placements],
            addresses={host: given.get(host) or commands.resolved_hostname(settings, host) for host in used},
            settings=to_json(settings),
        )
        with self.starting(run_dir):
            handle.save(run_dir)
            status = RunStatus.initial(run_id, [(p.role, p.index) for p in placements])
            status.message = f"starting on {', '.join(used)}"
            self.store.write_status(status)
            pid = self.start_follower(run_dir)
        return SubmitHandle(run_id, self.name, {"hosts": list(used), "follower_pid": pid})

    def stacks(self, run_id: str) -> dict[str, Any]:
        """Every running replica's stacks, asked on its host (`stacks.py`)."""
        from .stacks import take_stacks

        root = self.store.paths(run_id).root
        try:
            handle = HostsHandle.load(root)
        except (OSError, ValueError) as error:
            raise BackendError(f"run {run_id} has no hosts to ask: {error}") from None
        try:
            remote = json.loads((root / STARTED_FILE).read_text())
        except (OSError, ValueError):
            remote = {}  # its hosts are being prepared: each replica says it has not started
        status = self.store.status(run_id)
        targets = {r.key: r.pid for r in status.replicas if r.state == ReplicaState.RUNNING}
        return take_stacks(from_json(handle.settings), handle, remote, root, run_id, targets)

    def kill(self, run_id: str, role: str, index: int, signum: int) -> str:
        """One running replica ended on purpose on its host (`chaos.py`)."""
        from .chaos import kill_replica

        root = self.store.paths(run_id).root
        replica_to_kill(self.store.status(run_id), role, index)
        try:
            handle = HostsHandle.load(root)
            remote = json.loads((root / STARTED_FILE).read_text())
        except (OSError, ValueError) as error:
            raise BackendError(f"run {run_id} has not started on its hosts: {error}") from None
        return kill_replica(from_json(handle.settings), handle, remote, run_id, role, index, signum)

    def stop(self, run_id: str, timeout: float | None = None) -> None:
        """Stop every replica on every host (SIGTERM, the grace, SIGKILL) and wait until the run
        has finished; it ends Stopped unless it had finished."""
        root = self.store.paths(run_id).root
        status = self.store.status(run_id)
        if status.state.finished:
            return
        self.request_stop(run_id)
        self.follow(run_id)
        wait = timeout if timeout is not None else self.settings.stop_grace_s + STOP_MARGIN_S
        status = self.await_owner(run_id, time.monotonic() + wait)
        if not status.state.finished and (root / FOLLOWER.handle).exists() and not self.owner_alive(status):
            mark_stopped(status)  # no follower could do it
            self.store.write_status(status)
        elif not status.state.finished:
            raise BackendError(f"run {run_id} is still stopping after {wait:g} s; see {root / FOLLOWER.log}")
