"""A run's own follower handing its run to a Jupyter server's host of followers (`host.py`).

The host asks by writing `follower/handover.json` (the owner it will record: kind `server`, its
pid, creation time and host name). The follower reads it every tick of its loop; if the host is
there (its process alive, registered in the run store's `hosts/`), it stops writing (its log
sinks closed, its watch stopped), records the host as the run's owner in status.json, and exits,
which frees the run's follower lock for the host to take. The owner thus goes from the follower
to the host in one write: one owner at any time. A request from a host that is gone is ignored
(and removed): the follower follows on.
"""

from __future__ import annotations

import json
from pathlib import Path

from ....runstore import atomic_write_json
from ....runstore.models import RunOwner
from ...followed import owner_is_alive
from ..shared.handle import FOLLOWER_DIR

HANDOVER_FILE = f"{FOLLOWER_DIR}/handover.json"


def request(run_dir: Path, owner: RunOwner) -> None:
    atomic_write_json(run_dir / HANDOVER_FILE, owner.model_dump(mode="json"))


def withdraw(run_dir: Path) -> None:
    (run_dir / HANDOVER_FILE).unlink(missing_ok=True)


def requested(run_dir: Path, home: Path) -> RunOwner | None:
    """The host that asks for the run, if one does and is there; a request of a host that is
    gone (or unreadable) is removed."""
    path = run_dir / HANDOVER_FILE
    if not path.exists():
        return None
    try:
        owner = RunOwner.model_validate(json.loads(path.read_text()))
    except (OSError, ValueError):
        owner = None
    if owner is not None and owner.host and owner_is_alive(owner, home):
        return owner
    withdraw(run_dir)
    return None
