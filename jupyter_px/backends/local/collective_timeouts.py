"""A run whose first failure is a collective that timed out: the rank it waited for is named.

The rank that fails first in a hang is one that waited (`all_reduce` gave up after the run's
collective timeout: `diagnostics/collective_timeout.py`); Kubeflow's rule (the first replica to
fail fails the run) would blame it and call the rank at fault "stopped because master-0 failed".
So when the first failure is a collective timeout the supervisor holds the decision while it
takes the live replicas' stacks (once, in a thread, as on a stall: `diagnostics.taking`, a few
hundred milliseconds), then names as the cause every replica that was not waiting in a collective
(`diagnostics.missing_ranks`) or had already ended without failing (a rank that skipped the last
barrier): "worker-1 never joined the collective its peers waited in (master-0 timed out after
10 s); it was at <module>, cell [1] line 7: time.sleep(60)". That replica is ended Failed
(CollectiveTimeout); the others as usual, "stopped because worker-1 never joined a collective".
Where no replica is found outside a collective (every stack in one, or none could be read), the
run is decided as before.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
from typing import Any

from ...diagnostics import collective_timeout, missing_ranks, taking
from ...runstore import ReplicaState, RunPaths
from ...runstore.models import Reason
from ...topology import ReplicaNames
from ..outcome import Outcome
from .replica import Ending, EndReason, Replica

log = logging.getLogger(__name__)

_MILLISECONDS = re.compile(r"Timed out waiting (\d+) ?ms")


@dataclasses.dataclass(frozen=True)
class Named:
    """The run's outcome with the missing replicas as its cause, and how each of them ends."""

    outcome: Outcome
    endings: dict[str, Ending]
    because: str


def _first_failed(replicas: list[Replica]) -> Replica | None:
    failed = [r for r in replicas if r.status.state == ReplicaState.FAILED]
    return min(failed, key=lambda r: r.status.finished_at or 0) if failed else None


def _waited(message: str) -> str:
    found = _MILLISECONDS.search(message)
    return f" after {int(found.group(1)) / 1000:g} s" if found else ""


class CollectiveTimeouts:
    """`holds(replicas)` on each turn while the run would fail; then `name(...)`."""

    def __init__(self, paths: RunPaths):
        self.paths = paths
        self.snapshot: dict[str, Any] | None = None
        self._taking: threading.Thread | None = None

    @property
    def taking(self) -> bool:
        return self._taking is not None and self._taking.is_alive()

    def holds(self, replicas: list[Replica]) -> bool:
        """Whether the run's decision waits for the stacks: True from the moment the first failure
        is seen to be a collective timeout until the live replicas' stacks are in."""
        if self._taking is not None:
            return self._taking.is_alive()
        first = _first_failed(replicas)
        if first is None or not collective_timeout.is_timeout(first.status.message or ""):
            return False
        targets = {r.key: r.popen.pid for r in replicas if r.popen is not None}
        root, run_id = self.paths.root, self.paths.run_id
        why = f"{first.key}'s collective timed out"

        def take() -> None:
            try:
                self.snapshot = taking.take(root, run_id, targets, why=why)
            except Exception:
                log.exception("cannot take the replicas' stacks")

        self._taking = threading.Thread(target=take, name="px-timeout-stacks", daemon=True)
        self._taking.start()
        return True

    def name(self, outcome: Outcome, replicas: list[Replica], names: ReplicaNames) -> Named | None:
        """The outcome that names the replicas the others waited for; None where none is found."""
        first = _first_failed(replicas)
        if self.snapshot is None or first is None or not collective_timeout.is_timeout(first.status.message or ""):
            return None
        outside = set(missing_ranks.not_waiting(self.snapshot))
        ended_clean = {r.key for r in replicas if r.status.state == ReplicaState.SUCCEEDED}
        missing = [r for r in replicas if r.key in outside or r.key in ended_clean]
        if not missing:
            return None
        label = {r.key: names.label(r.spec.role, r.spec.index) for r in replicas}
        who = ", ".join(label[r.key] for r in missing)
        waited = f"{label[first.key]} timed out{_waited(first.status.message or '')}"
        places = []
        for r in missing:
            at = missing_ranks.where(self.snapshot, r.key)
            places.append(f"{label[r.key]} was at {at}" if at else f"{label[r.key]} had ended without joining it")
        their = "its" if len(missing) == 1 else "their"
        message = f"{who} never joined the collective {their} peers waited in ({waited}); {'; '.join(places)}"
        endings = {
            r.key: Ending(
                EndReason.COLLECTIVE_TIMEOUT,
                ReplicaState.FAILED,
                f"never joined the collective its peers waited in ({waited}); stopped",
            )
            for r in missing
            if r.key in outside
        }
        log.info("collective timeout: %s", message)
        cause = label[missing[0].key]
        named = Outcome(outcome.state, Reason.COLLECTIVE_TIMEOUT, message, cause=cause)
        return Named(named, endings, because=f"{cause} never joined a collective")
