"""How long a replica's collectives wait for a missing rank: set in every replica by the runner.

A rank that never reaches an `all_reduce` (stuck in a DataLoader, sleeping, skipping a barrier)
leaves its peers waiting until the process group's timeout, which PyTorch sets to 30 minutes for
gloo (`torch/distributed/constants.py`, `default_pg_timeout`) and 10 for NCCL. For a job started
from a notebook, half an hour of "Running" with nothing happening is a hang, so the product gives
every process group it does not set itself a shorter default, `DEFAULT_S` (NCCL's own 10
minutes, for gloo too), and a run may set its own (`termination: {collectiveTimeout: 120}`, which
reaches each replica as `PX_COLLECTIVE_TIMEOUT_S`, as a replica's `env` may set it directly).
Before it ends, the stall check (`diagnostics/stalls.py`) has shown the run Stalled with every
rank's stack; when it ends, the ranks that timed out say so in their tracebacks, which
`is_timeout` recognises, and the backend names the rank they waited for.

How it is applied: `init_process_group` and `new_group` called without `timeout=` read the
module globals `default_pg_timeout` / `default_pg_nccl_timeout` of
`torch.distributed.distributed_c10d` at call time (`_get_default_timeout`, torch 2.13), so the
runner sets those, once that module is imported (`after_import.py`: at once where it already is, in
a replica forked from a warm template, else from an import hook, so that a replica that never
imports torch pays nothing). A timeout the user's code passes (`timeout=timedelta(...)`) wins, as it should. NCCL's
watchdog then aborts a timed-out collective (`TORCH_NCCL_ASYNC_ERROR_HANDLING`, on by default).
The rendezvous (the store the ranks meet through) keeps at least `RENDEZVOUS_S`, and returns
once every rank has reached it: a short collective timeout must not fail a rank that started
before its peers.

Standard library only: the runner imports it in every replica.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from datetime import timedelta
from types import ModuleType
from typing import Any

from .after_import import on_import

#: The variable of the environment contract that carries a run's timeout, in seconds.
ENV = "PX_COLLECTIVE_TIMEOUT_S"
#: The product's default: NCCL's own 10 minutes, where gloo's is 30.
DEFAULT_S = 600.0
#: The module whose globals hold the defaults.
_C10D = "torch.distributed.distributed_c10d"

#: What a rank that timed out in a collective prints: gloo's transport ("Timed out waiting 10000ms
#: for recv operation to complete", gloo/transport/tcp/unbound_buffer.cc), its context's wait
#: ("Timed out waiting ... for"), NCCL's watchdog ("Watchdog caught collective operation timeout").
_TIMEOUT = re.compile(
    r"Timed out waiting \d+ ?ms for (?:recv|send)|Watchdog caught collective operation timeout"
    r"|collective operation timeout|Timed out waiting \d+ ?ms"
)


def seconds(environ: Mapping[str, str]) -> float | None:
    """The timeout this replica's collectives get: the run's, else `DEFAULT_S`; None where the
    variable does not hold a positive number (the replica then keeps PyTorch's own)."""
    text = environ.get(ENV)
    if text is None:
        return DEFAULT_S
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value > 0 else None


#: How long a rank waits for its peers at the rendezvous (the TCP store `init_process_group`
#: meets them through) when the run's collective timeout is shorter: `init_process_group` gives
#: its store the same timeout as its collectives, so with `collectiveTimeout: 5` a rank whose pod
#: or node started first gave up on its peers after 5 s (pods start seconds to minutes apart: an
#: image pull, a node scaled up). torchrun's rendezvous waits 600 s for its peers
#: (`torch/distributed/elastic/rendezvous/dynamic_rendezvous.py`, RendezvousTimeout's join).
RENDEZVOUS_S = 600.0


def _patient(rendezvous: Callable[..., Any], collectives: timedelta) -> Callable[..., Any]:
    """`rendezvous` whose store waits at least `RENDEZVOUS_S` when called with the collectives'
    default timeout, and which returns once every rank has met there (a timeout the user's code
    passed is left as it is)."""

    def rendezvous_patiently(url: str, rank: int = -1, world_size: int = -1, **kwargs: Any) -> Any:
        if kwargs.get("timeout") == collectives and collectives < timedelta(seconds=RENDEZVOUS_S):
            kwargs["timeout"] = timedelta(seconds=RENDEZVOUS_S)
            return _when_all_met(rendezvous(url, rank, world_size, **kwargs))
        return rendezvous(url, rank, world_size, **kwargs)

    rendezvous_patiently.__wrapped__ = rendezvous  # type: ignore[attr-defined]
    return rendezvous_patiently


#: How many rendezvous this process has been through: each meeting's keys are its own.
_meetings = 0


def _when_all_met(met: Iterator[tuple[Any, int, int]]) -> Iterator[tuple[Any, int, int]]:
    """The rendezvous' store, rank and world size once every rank has reached the store.

    `init_process_group` sets the store's timeout to the collectives' right after the rendezvous,
    and the process group's set-up waits on it for every rank's address: with
    `collectiveTimeout: 5`, a rank that met the store early gave up on a peer still starting
    ("DistStoreError: wait timeout after 5000ms, keys: /default_pg/0//cpu//0/0", three pods on a
    loaded machine). Meeting here first, at the rendezvous' patience, lets the set-up start with
    every rank there. Not under torchrun, whose agents met before they started the ranks (and
    whose store outlives a restart's ranks, which would count again from one)."""
    global _meetings
    for store, rank, world_size in met:
        if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True" and world_size > 1:
            _meetings += 1
            key = f"jupyter_px/all_ranks/{_meetings}"
            if store.add(key, 1) == world_size:
                store.set(f"{key}/met", "1")
            store.wait([f"{key}/met"])
        yield store, rank, world_size


def _apply(module: ModuleType, value: float) -> None:
    timeout = timedelta(seconds=value)
    module.default_pg_timeout = timeout  # type: ignore[attr-defined]
    if getattr(module, "default_pg_nccl_timeout", None) is not None:  # None: built without NCCL
        module.default_pg_nccl_timeout = timeout  # type: ignore[attr-defined]
    rendezvous = getattr(module, "rendezvous", None)
    if rendezvous is not None:  # (init_process_group calls the name it imported into this module)
        module.rendezvous = _patient(getattr(rendezvous, "__wrapped__", rendezvous), timeout)  # type: ignore[attr-defined]


#: The seconds `install` last applied (what the import hook applies).
_installed = DEFAULT_S


def _apply_installed(module: ModuleType) -> None:
    _apply(module, _installed)


def install(environ: Mapping[str, str] | None = None) -> float | None:
    """Give this process's collectives the run's timeout (see the module's docstring); the
    seconds applied, or None where the replica keeps PyTorch's default."""
    value = seconds(os.environ if environ is None else environ)
    if value is None:
        return None
    global _installed
    _installed = value
    on_import(_C10D, _apply_installed)
    return value


def is_timeout(text: str) -> bool:
    """Whether a replica's error (its traceback's last lines) is a collective that timed out."""
    return bool(_TIMEOUT.search(text))
