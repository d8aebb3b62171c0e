"""A run whose first failure is a collective that timed out: the rank it waited for is named.

The rank that fails first in a hang is one that waited (`all_reduce` gave up after the run's
collective timeout: `diagnostics/collective_timeout.py`); Kubeflow's rule (the first replica to
fail fails the run: `outcome.py`) would blame it and call the rank at fault "stopped because
master-0 failed". So a backend that can read its replicas' stacks (locally the supervisor, on Slurm
the follower) holds the run's decision when the first failure is a collective timeout, takes the
live replicas' stacks once, in a thread (as on a stall; a few hundred milliseconds), and names as
the cause every replica that was not waiting in a collective (`diagnostics.missing_ranks`) or had
already ended without failing (a rank that skipped the last barrier): "worker-1 never joined the
collective its peers waited in (master-0 timed out after 10 s in all_reduce #31); worker-1 was at
<module>, cell [1] line 7: time.sleep(60)" (the collective from the waiting rank's failure record:
`diagnostics/flight_recorder.py`). That replica is ended Failed (CollectiveTimeout); the others as usual,
"stopped because worker-1 never joined a collective", and so is a rank that failed only because the
peer that timed out closed its connections first (`Named.settle`). Where no replica is found outside a
collective (every stack in one, or none could be read), the run is decided as before.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..diagnostics import collective_timeout, flight_recorder, missing_ranks
from ..runstore import ReplicaState, ReplicaStatus
from ..runstore.models import Reason
from ..topology import ReplicaNames
from .outcome import Outcome

log = logging.getLogger(__name__)

_MILLISECONDS = re.compile(r"Timed out waiting (\d+) ?ms")

#: How long the decision waits, after the stacks came in, for the exit of a replica that gave none.
SETTLE_S = 3.0
#: How long after a first failure that is a closed connection a peer's timeout is looked for.
CASCADE_S = 2.0
_CLOSED_BY_PEER = re.compile(r"Connection (closed|reset) by peer")

#: Takes the stacks of `targets` (replica key -> pid) and keeps them in the run; the snapshot.
TakeStacks = Callable[[dict[str, int | None], str], dict[str, Any]]


@dataclasses.dataclass(frozen=True)
class Named:
    """The run's outcome with the missing replicas as its cause; what each of them is told
    (key -> its message; it ends Failed, CollectiveTimeout); what the others are told; the
    replicas that failed only because a peer that timed out closed their connections."""

    outcome: Outcome
    missing: dict[str, str]
    because: str
    cascaded: frozenset[str] = frozenset()

    def settle(self, replica: ReplicaStatus) -> None:
        """An ended replica as this outcome tells it: a missing rank Failed (CollectiveTimeout)
        with what it is told; a rank whose collective failed with gloo's "Connection closed by
        peer" (the peer that timed out exited first, on a loaded machine before this rank's own
        timeout came), Stopped because of the missing rank, as the run's other replicas are (its
        exit code kept: it is a consequence, not a second cause)."""
        if replica.state == ReplicaState.RUNNING:
            return
        if replica.key in self.missing:
            replica.state, replica.reason = ReplicaState.FAILED, Reason.COLLECTIVE_TIMEOUT
            replica.message = self.missing[replica.key]
        elif replica.key in self.cascaded and replica.state == ReplicaState.FAILED:
            replica.state, replica.reason = ReplicaState.STOPPED, Reason.STOPPED_BY_RUN
            replica.message = f"stopped because {self.because}"


def _first_failed(replicas: Sequence[ReplicaStatus]) -> ReplicaStatus | None:
    failed = [r for r in replicas if r.state == ReplicaState.FAILED]
    return min(failed, key=lambda r: r.finished_at or 0) if failed else None


def first_timeout(replicas: Sequence[ReplicaStatus]) -> ReplicaStatus | None:
    """The first replica to fail, where its failure is a collective that timed out; or, where the
    first seen to fail lost its connection to a peer (gloo: "Connection closed by peer", the
    peer being a rank whose own timeout ended it a moment earlier), the first timeout among the
    failures of the next `CASCADE_S`."""
    first = _first_failed(replicas)
    if first is None or collective_timeout.is_timeout(first.message or ""):
        return first
    if not _CLOSED_BY_PEER.search(first.message or ""):
        return None
    timed_out = [
        r
        for r in replicas
        if r.state == ReplicaState.FAILED
        and collective_timeout.is_timeout(r.message or "")
        and (r.finished_at or 0) - (first.finished_at or 0) <= CASCADE_S
    ]
    return min(timed_out, key=lambda r: r.finished_at or 0) if timed_out else None


def _peer_closed_lately(replicas: Sequence[ReplicaStatus]) -> bool:
    """Whether the first failure is a peer's closed connection of less than `CASCADE_S` ago: a
    timeout among the others may still be seen."""
    first = _first_failed(replicas)
    return (
        first is not None
        and bool(_CLOSED_BY_PEER.search(first.message or ""))
        and time.time() - (first.finished_at or 0) < CASCADE_S
    )


def _failed_in_a_collective(replica: ReplicaStatus) -> bool:
    """Whether the replica ended with a collective's failure: its own timeout, or the connection
    a peer closed as it timed out."""
    message = replica.message or ""
    return replica.state == ReplicaState.FAILED and (
        collective_timeout.is_timeout(message) or bool(_CLOSED_BY_PEER.search(message))
    )


def _waited(message: str) -> str:
    found = _MILLISECONDS.search(message)
    return f" after {int(found.group(1)) / 1000:g} s" if found else ""


def _in(replica: ReplicaStatus) -> str:
    """` in all_reduce #31`: the collective the replica's failure record says it timed out in
    (the flight recorder's newest entry), or nothing."""
    collectives = replica.failure.collectives if replica.failure is not None else None
    return f" in {flight_recorder.describe(collectives[-1])}" if collectives else ""


def name_missing(
    outcome: Outcome, replicas: Sequence[ReplicaStatus], snapshot: dict[str, Any], names: ReplicaNames
) -> Named | None:
    """The outcome that names the replicas the others waited for; None where none is found."""
    first = first_timeout(replicas)
    if first is None:
        return None
    # a rank whose stack was outside every collective but that has since failed in one (its
    # collective broke as a peer timed out, and it was unwinding: a DataLoader's `__del__` on
    # its way out) had joined it
    outside = set(missing_ranks.not_waiting(snapshot)) - {r.key for r in replicas if _failed_in_a_collective(r)}
    # a rank seen outside every collective first, then one that had ended without failing
    missing = [r for r in replicas if r.key in outside] + [r for r in replicas if r.state == ReplicaState.SUCCEEDED]
    label = {r.key: names.label(r.role, r.index) for r in replicas}
    places = []
    for r in missing:
        at = missing_ranks.where(snapshot, r.key)
        places.append(f"{label[r.key]} was at {at}" if at else f"{label[r.key]} had ended without joining it")
    if not missing:  # every rank in a collective: one in another than its peers (a skipped barrier)?
        elsewhere = _in_another_collective(replicas, snapshot)
        if elsewhere is None:
            return None
        missing, waited_at = elsewhere
        places = [
            f"{label[r.key]} was in another collective than its peers ({_at(r, snapshot)}; they waited at {waited_at})"
            for r in missing
        ]
    # the peer that waited: the first to fail of those not named (in a skipped barrier, the rank
    # at fault may time out first in its own collective)
    named_keys = {r.key for r in missing}
    waiters = [r for r in replicas if r.key not in named_keys and first_timeout([r]) is not None]
    waiter = min(waiters, key=lambda r: r.finished_at or 0) if waiters else first
    waited = f"{label[waiter.key]} timed out{_waited(waiter.message or '')}{_in(waiter)}"
    who, their = ", ".join(label[r.key] for r in missing), "its" if len(missing) == 1 else "their"
    message = f"{who} never joined the collective {their} peers waited in ({waited}); {'; '.join(places)}"
    told = f"never joined the collective its peers waited in ({waited}); stopped"
    log.info("collective timeout: %s", message)
    cause = label[missing[0].key]
    named = Outcome(outcome.state, Reason.COLLECTIVE_TIMEOUT, message, cause=cause)
    cascaded = frozenset(
        r.key
        for r in replicas
        if r.state == ReplicaState.FAILED and r.key not in named_keys and _CLOSED_BY_PEER.search(r.message or "")
    )
    told_missing = {r.key: told for r in missing if r.key in outside}
    return Named(named, told_missing, f"{cause} never joined a collective", cascaded)


def _at(replica: ReplicaStatus, snapshot: dict[str, Any]) -> str | None:
    """Where a rank waited: the line of its code its failure record names (a rank whose own
    collective timed out, or that failed there when a peer that timed out closed its
    connections), else the one its stack shows (a rank still waiting)."""
    failure = replica.failure
    if replica.state == ReplicaState.FAILED and failure is not None and failure.label and failure.line:
        return f"{failure.label} line {failure.line}"
    return missing_ranks.user_line(snapshot, replica.key)


def _in_another_collective(
    replicas: Sequence[ReplicaStatus], snapshot: dict[str, Any]
) -> tuple[list[ReplicaStatus], str] | None:
    """Where every rank waited in a collective but not all at the same line of code, the ranks
    away from the line most of them waited at (rank 2 in `all_reduce` while the others wait in
    the `barrier` it skipped: gloo matches neither), with that line; None where the ranks agree,
    or no line is shared by more ranks than any other."""
    at = {r.key: _at(r, snapshot) for r in replicas if r.state != ReplicaState.SUCCEEDED}
    counts = collections.Counter(place for place in at.values() if place is not None)
    ranked = counts.most_common(2)
    if len(ranked) < 2 or ranked[0][1] == ranked[1][1]:
        return None
    most = ranked[0][0]
    return [r for r in replicas if at.get(r.key) not in (None, most)], most


class CollectiveTimeouts:
    """`holds(replicas)` on each turn while the run would fail; then `name(...)`."""

    def __init__(self, take: TakeStacks):
        self._take = take
        self.snapshot: dict[str, Any] | None = None
        self._taken_at = 0.0
        self._taking: threading.Thread | None = None
        #: the failure the stacks are taken for (a run started again as its next attempt may
        #: time out again: its own stacks are taken then)
        self._for: tuple[str, float | None] | None = None

    @property
    def taking(self) -> bool:
        return self._taking is not None and self._taking.is_alive()

    def holds(self, replicas: Sequence[ReplicaStatus]) -> bool:
        """Whether the run's decision waits for the stacks: True from the moment the first failure
        is seen to be a collective timeout until the live replicas' stacks are in."""
        first = first_timeout(replicas)
        if first is None:
            return _peer_closed_lately(replicas)
        if self._for == (first.key, first.finished_at):
            return self.taking or self._settling(replicas)
        self._for = key = (first.key, first.finished_at)
        self.snapshot = None
        targets = {r.key: r.pid for r in replicas if r.state == ReplicaState.RUNNING}
        why = f"{first.key}'s collective timed out"

        def take() -> None:
            try:
                snapshot = self._take(targets, why)
            except Exception:
                log.exception("cannot take the replicas' stacks")
                return
            if self._for == key:  # not an earlier attempt's, come late
                self.snapshot, self._taken_at = snapshot, time.monotonic()

        self._taking = threading.Thread(target=take, name="px-timeout-stacks", daemon=True)
        self._taking.start()
        return True

    def _settling(self, replicas: Sequence[ReplicaStatus]) -> bool:
        """Whether a replica whose place the stacks leave open is still seen running, for at most
        `SETTLE_S` after the stacks came in: its exit, with its failure record, is what places it
        (where its backend learns of exits by polling, as Slurm's follower does). Open: one that
        gave no stack (it exited as they were taken: a peer whose own timeout came a moment
        later), and one seen outside every collective, which may be a peer on its way out of a
        collective that broke (a DataLoader's `__del__` as the error unwinds) rather than the
        rank that never joined: a rank at fault still runs when the time is up."""
        if self.snapshot is None or time.monotonic() - self._taken_at >= SETTLE_S:
            return False
        entries = self.snapshot.get("replicas") or []
        placed = {e.get("key") for e in entries if missing_ranks.waiting(e) is True}
        return any(r.state == ReplicaState.RUNNING and r.key not in placed for r in replicas)

    def name(self, outcome: Outcome, replicas: Sequence[ReplicaStatus], names: ReplicaNames) -> Named | None:
        """The outcome that names the replicas the others waited for (`name_missing`), from the
        stacks taken for this failure; where none were (every replica had ended before the
        failure was seen: a job that ended first), from the replicas' own records alone. None
        where no replica is found outside a collective or away from its peers."""
        first = first_timeout(replicas)
        if first is None:
            return None
        taken = self.snapshot if self._for == (first.key, first.finished_at) else None
        if taken is None and any(r.state == ReplicaState.RUNNING for r in replicas):
            return None
        return name_missing(outcome, replicas, taken or {}, names)
