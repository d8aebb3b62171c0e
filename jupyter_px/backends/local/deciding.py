"""When the run is decided, after each turn of the supervisor's loop: Kubeflow's rules over the
replicas' states (`../outcome.py`), and what each outcome does to the replicas still running.

A failure first asks whose fault it was where a collective timed out (`../collective_blame.py`:
the rank the others waited for is failed, the peers that failed with the timeout are told why),
then the run's attempts (`attempts.py`: a retry or an elastic re-forming starts the gang again
instead of deciding). A success gives the workers still in their last collective
`COMPLETION_GRACE_S` to finish; a server (a parameter server, a chief's evaluator) is stopped.
"""

from __future__ import annotations

import logging
import time
from typing import Protocol

from ...runstore import ReplicaState, RunState
from ...topology import ReplicaNames
from ..collective_blame import CollectiveTimeouts
from ..outcome import Outcome, run_outcome
from .attempts import Supervisor as AttemptsSupervisor
from .config import COMPLETION_GRACE_S
from .replica import Ending, EndReason, Replica

log = logging.getLogger(__name__)


class Supervisor(AttemptsSupervisor, Protocol):
    """What of the run's supervisor (`supervisor.Supervisor`) deciding reads and acts through:
    what an attempt uses, and the collectives' timeouts."""

    timeouts: CollectiveTimeouts

    def _is_server(self, replica: Replica) -> bool: ...
    def _decide_outcome(self, outcome: Outcome, others: Ending) -> None: ...


def decide(sup: Supervisor) -> None:
    """Decide the run if its replicas' states decide it (once: a decided run stays decided)."""
    if sup.outcome is not None:
        return
    names = ReplicaNames.of(sup.topology)
    outcome = run_outcome([r.status for r in sup.replicas], names)
    if outcome is None:
        return
    if outcome.state == RunState.FAILED:
        _failed(sup, outcome, names)
        return
    sup.outcome = outcome
    sup.writer.dirty = True
    log.info("run %s: %s", outcome.state.value, outcome.message)
    grace_end = time.monotonic() + COMPLETION_GRACE_S
    for replica in sup.replicas:
        if replica.running and not sup._is_server(replica):
            replica.finish_by = grace_end  # e.g. a worker still in its last collective
        else:
            sup._stop_replica(
                replica, Ending.by_run(ReplicaState.SUCCEEDED, "still running when the run succeeded; stopped")
            )


def _failed(sup: Supervisor, outcome: Outcome, names: ReplicaNames) -> None:
    statuses = [r.status for r in sup.replicas]
    if sup.timeouts.holds(statuses):  # a collective timed out: whose was the fault?
        return
    named = sup.timeouts.name(outcome, statuses, names)
    decided = sup.attempts.on_failure(sup, named.outcome if named else outcome)  # None: the gang restarts
    if decided is None:
        return
    for replica in sup.replicas:  # the rank the others waited for is stopped; a peer that failed, told
        if named is not None and replica.key in named.missing:
            told = named.missing[replica.key]
            sup._stop_replica(replica, Ending(EndReason.COLLECTIVE_TIMEOUT, ReplicaState.FAILED, told))
        elif named is not None:
            named.settle(replica.status)
    because = named.because if named else f"{decided.cause} failed"
    sup._decide_outcome(decided, Ending.by_run(ReplicaState.STOPPED, f"stopped because {because}"))
