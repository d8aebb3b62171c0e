"""What a submitted run keeps about its hosts, in its run directory.

`ssh.json` (written once by submit) lets any process (the follower, `stop`, a keeper) find the
run's hosts and replicas again: the settings it was started with (hosts, ssh configuration), so
a later change of the settings file does not send a stop to other machines. `ssh-stop` asks the
follower to stop the run. What the follower learns of each replica (its host's process id, its
port, where its run directory is there) it writes under `ssh/replicas/`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ...runstore import atomic_write_json
from ..followed import FollowerSpec

ENTRY = "ssh/entry.py"
PLAN_FILE = "ssh/plan.json"
REPLICAS_DIR = "ssh/replicas"
HANDLE_FILE = "ssh.json"
STOP_FILE = "ssh-stop"
#: Each host's run directory (`{host: path}`), written once the follower has prepared the hosts.
STARTED_FILE = "ssh/started"
FOLLOWER = FollowerSpec(
    module="jupyter_px.backends.ssh.follower",
    handle=HANDLE_FILE,
    stop=STOP_FILE,
    log="ssh/follower.log",
    start_lock="ssh/.start.lock",
    lock="ssh/.follower.lock",
)


@dataclass(frozen=True)
class HostsHandle:
    submitted_at: float
    #: the replicas in start order: (role, index, host)
    replicas: list[tuple[str, int, str]] = field(default_factory=list)
    #: {host: the address its replicas are reached at}
    addresses: dict[str, str] = field(default_factory=dict)
    #: the settings the run started with (`SshSettings` fields, as JSON)
    settings: dict[str, Any] = field(default_factory=dict)

    def save(self, run_dir: Path) -> None:
        atomic_write_json(run_dir / HANDLE_FILE, asdict(self))

    @classmethod
    def load(cls, run_dir: Path) -> HostsHandle:
        fields = json.loads((run_dir / HANDLE_FILE).read_text())
        fields["replicas"] = [(str(r), int(i), str(h)) for r, i, h in fields.get("replicas") or []]
        return cls(**fields)

    def hosts(self) -> list[str]:
        return list(dict.fromkeys(host for _, _, host in self.replicas))


def replica_file(run_dir: Path, key: str) -> Path:
    """What the follower learned of one replica (host, pid, port, remote run directory)."""
    return run_dir / REPLICAS_DIR / f"{key}.json"
