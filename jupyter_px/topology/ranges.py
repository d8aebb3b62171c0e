"""A requested/limited quantity in one phrasing for every surface: `cpu 0.5–1`.

The notebook's replica table, the topology summaries (`jupyter px validate`, `%%px_topology`, the
sidebar's summary from the server) and the CLI all write a requests/limits pair the same way:

* `2` when requests equal limits,
* `0.5–1` (an en dash) when both are set and differ,
* `up to 2` with only a limit, `at least 1` with only a request,
* `-` when neither is set.

It lives with the topology (importing nothing of jupyter-px but `topology.quantities`) so that
`topology.export` can use it as well as `presentation.text`: imports point down only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .quantities import format_number

RANGE_DASH = "\u2013"


def quantity_range(requests: float | None, limits: float | None, show: Callable[[float], str] | None = None) -> str:
    """See the module docstring; `show` formats one number (e.g. `memory_text`)."""

    def shown(number: float) -> str:
        return show(number) if show is not None else str(format_number(number))

    if requests == limits:
        return "-" if requests is None else shown(requests)
    if requests is None:
        return "-" if limits is None else f"up to {shown(limits)}"
    if limits is None:
        return f"at least {shown(requests)}"
    return f"{shown(requests)}{RANGE_DASH}{shown(limits)}"  # `512 MiB–1 GiB` with units


def value_range(value: Any, show: Callable[[float], str] | None = None) -> str:
    """`quantity_range` of a topology's `{requests, limits}` value (None: `-`)."""
    if value is None:
        return "-"
    return quantity_range(value.requests, value.limits, show)
