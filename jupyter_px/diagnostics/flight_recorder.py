"""PyTorch's flight recorder in every replica: which collective a rank was in when it timed out.

torch records each collective a process group issues (its operation, its number in the group's
sequence, its sizes) in a ring buffer when `TORCH_FR_BUFFER_SIZE` (or the older
`TORCH_NCCL_TRACE_BUFFER_SIZE`) is above 0 as the group is created; torch 2.13 does so for gloo
as for NCCL (`distributed_c10d.py`, `FlightRecorderHook`; `_dump_fr_trace_json` reads it back).
The runner turns it on (`install`: `BUFFER_ENTRIES`, a few hundred kilobytes, unless the run's
environment says otherwise; `0` there keeps it off), and when the user's code raised a
collective's timeout it adds the group's last collectives to the replica's failure record
(`last_collectives`), which every backend already carries home (a file, or a pod's log line).
Then the run's message says what its peers waited in: "worker-0 timed out after 20 s in
all_reduce #31", and of a rank that timed out elsewhere, where it was.

NCCL's own dump on a watchdog timeout (`TORCH_NCCL_DUMP_ON_TIMEOUT`, a pickle per rank) is not
collected: a replica whose code sees the timeout as an exception is what this reads.

Standard library only: the runner imports it in every replica.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import MutableMapping
from typing import Any

#: The variable torch reads as a process group is created (the NCCL-only name before it).
ENV = "TORCH_FR_BUFFER_SIZE"
OLD_ENV = "TORCH_NCCL_TRACE_BUFFER_SIZE"
#: Entries kept per process group: a few hundred bytes each.
BUFFER_ENTRIES = 2000
#: Collectives kept in a failure record, newest last.
KEPT = 5


def install(environ: MutableMapping[str, str] | None = None) -> None:
    """Turn the recorder on in this process, unless its environment already says."""
    env = os.environ if environ is None else environ
    if ENV not in env and OLD_ENV not in env:
        env[ENV] = str(BUFFER_ENTRIES)


def last_collectives() -> list[dict[str, Any]]:
    """The default group's last collectives (`op`, `seq`, `state`), newest last; none where torch's
    distributed package is not in use, or its recorder is off."""
    c10d = sys.modules.get("torch._C._distributed_c10d")
    dump = getattr(c10d, "_dump_fr_trace_json", None)
    if dump is None:
        return []
    try:
        entries = json.loads(dump(includeCollectives=True)).get("entries") or []
    except Exception:  # a recorder that is off, a torch without it: nothing to add
        return []
    kept = []
    for entry in entries[-KEPT:]:
        name = str(entry.get("profiling_name") or "")
        kept.append(
            {
                "op": name.split(":", 1)[-1] or "collective",
                "seq": entry.get("collective_seq_id"),
                "group": (entry.get("process_group") or [None, None])[-1],
                "state": entry.get("state"),
            }
        )
    return kept


def describe(collective: dict[str, Any] | None) -> str:
    """`all_reduce #31` (`#31 of group tp` outside the default group)."""
    if not collective:
        return ""
    group = collective.get("group")
    where = f" of group {group}" if group and group != "default_pg" else ""
    return f"{collective.get('op')} #{collective.get('seq')}{where}"
