"""Elastic workers of a local run (`n_workers: "MIN:MAX"`): which workers take part in the
current attempt, and when a lost one may come back.

torchrun's elastic agent (`--nnodes=MIN:MAX`, torch/distributed/elastic/agent/server/api.py
`_invoke_run`) restarts every worker of the group on a membership change, with a new rendezvous
whose world is the nodes present, as long as there are at least MIN; a node that comes back
joins at the next rendezvous. Here the supervisor is the rendezvous: a worker lost beyond the
run's retries (`termination.max_retries`) leaves, and the gang starts again without it (ranks
stay contiguous, `cluster.torch_env`); it returns after its own restart back-off
(`restart_policy`, `max_restarts`) at the next checkpoint the run saves, so the step the gang
re-forms at is one it has saved and no work is lost. Each re-forming is an attempt of its own,
marked in the logs and the status like a retry, and uses none of the run's retries.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class Membership:
    """The workers of an elastic run: at least `minimum`, at most `maximum`."""

    minimum: int
    maximum: int
    #: Workers (by index) not in the current attempt.
    absent: set[int] = field(default_factory=set)
    #: Worker index -> when (time.monotonic) it may come back; absent ones not listed stay out.
    returns: dict[int, float] = field(default_factory=dict)

    @property
    def present(self) -> int:
        return self.maximum - len(self.absent)

    def can_lose(self, count: int) -> bool:
        """Whether the run may go on without `count` more of its present workers."""
        return self.present - count >= self.minimum

    def leave(self, index: int, back_at: float | None) -> None:
        self.absent.add(index)
        if back_at is None:
            self.returns.pop(index, None)
        else:
            self.returns[index] = back_at

    def due(self, now: float | None = None) -> list[int]:
        """The absent workers whose back-off is over."""
        now = time.monotonic() if now is None else now
        return sorted(index for index, at in self.returns.items() if at <= now)

    def rejoin(self, index: int) -> None:
        self.absent.discard(index)
        self.returns.pop(index, None)

    def words(self) -> str:
        """`3 of 2:4 workers`"""
        return f"{self.present} of {self.minimum}:{self.maximum} workers"
