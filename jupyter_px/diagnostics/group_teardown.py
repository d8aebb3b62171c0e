"""A DDP model freed after `destroy_process_group()` cannot hang its replica: set by the runner.

A script that ends with its DDP model still alive when it calls `destroy_process_group()` frees
the model afterwards (a local going out of scope, a `del`). The model's `Reducer` then holds the
last reference to the gloo process group, and its destructor, bound to Python without releasing
the GIL, runs the group's destructor, which joins gloo's worker threads with the GIL held. If a
worker thread is still finishing the last all-reduce of the last backward pass (freeing the work
frees a Python object, the `contextvars` context autograd stashed in its thread-local state), it
waits for the GIL: neither thread moves again (docs/warm.md has the stacks; PyTorch's account of
this class of bug is pytorch/pytorch#56297). Seen in 2 of 60 runs of such a script forked warm on
a loaded machine, where a replica reaches the end of its script sooner.

The guard removes the last-reference drop from the race: `destroy_process_group` keeps the groups
it destroys referenced until the replica ends. The Reducer's destructor then drops a reference that
is not the last, and joins nothing; the groups are never freed, since the runner leaves with
`os._exit` (the process's end takes their threads). Everything else of the destroy happens as
PyTorch does it (the groups are shut down and unregistered; a new `init_process_group` works).

Standard library only: the runner imports it in every replica.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .after_import import on_import

_C10D = "torch.distributed.distributed_c10d"
#: The process groups destroyed in this replica, kept until it ends.
KEPT: list[Any] = []


def _destroyed_groups(c10d: ModuleType, group: Any) -> list[Any]:
    """What `destroy_process_group(group)` is about to destroy: every group for the default
    group (None or WORLD, torch 2.13's `distributed_c10d.py`), else `group`."""
    world = getattr(c10d, "_world", None)
    if group is None or group is getattr(getattr(c10d, "GroupMember", None), "WORLD", object()):
        return list(getattr(world, "pg_map", None) or ())
    return [group]


def _guarded(c10d: ModuleType, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def destroy_process_group(*args: Any, **kwargs: Any) -> Any:
        group = args[0] if args else kwargs.get("group")
        KEPT.extend(_destroyed_groups(c10d, group))
        return original(*args, **kwargs)

    destroy_process_group.px_guarded = True  # type: ignore[attr-defined]
    return destroy_process_group


def _apply(c10d: ModuleType) -> None:
    original = getattr(c10d, "destroy_process_group", None)
    if original is None or getattr(original, "px_guarded", False):
        return
    guarded = _guarded(c10d, original)
    c10d.destroy_process_group = guarded  # type: ignore[attr-defined]
    package = sys.modules.get("torch.distributed")  # (its `from .distributed_c10d import *` has run)
    if package is not None and getattr(package, "destroy_process_group", None) is original:
        package.destroy_process_group = guarded  # type: ignore[attr-defined]


def install() -> None:
    """Guard this replica's `destroy_process_group` (now, or once torch.distributed is imported)."""
    on_import(_C10D, _apply)
