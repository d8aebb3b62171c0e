"""Argument groups the magics share, as decorators (the way ipyparallel shares `exec_args`),
and the checks that go with them, so an option reads and behaves the same on every magic."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument

_F = TypeVar("_F", bound=Callable[..., Any])

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

#: How a run is named on every magic (resolved by `RunStore.resolve`).
RUN_HELP = "a run id, a run name (its newest run) or 'last'"


def _apply(function: _F, *decorators: Callable[[_F], _F]) -> _F:
    # magic_arguments lists arguments in the order their decorators run: innermost first
    for decorate in reversed(decorators):
        function = decorate(function)
    return function


def run_arg(function: _F) -> _F:
    """`RUN`: the run the magic is about."""
    return _apply(function, argument("run", help=RUN_HELP))


def output_arg(what: str) -> Callable[[_F], _F]:
    """`-o VAR`: store `what` in a notebook variable (checked by `check_output`)."""

    def decorate(function: _F) -> _F:
        return _apply(function, argument("-o", "--output", metavar="VAR", help=f"store {what} in this variable"))

    return decorate


def wait_args(function: _F) -> _F:
    """`--wait [--timeout SECONDS]`: block until the run ends (checked by `check_wait`)."""
    return _apply(
        function,
        argument("--wait", action="store_true", help="block until the run ends; an error if it did not succeed"),
        argument("--timeout", type=float, metavar="SECONDS", help="with --wait: give up waiting after this long"),
    )


def check_output(args: Any) -> None:
    if args.output is not None and not IDENTIFIER.match(args.output):
        raise UsageError(f"-o {args.output!r}: not a valid Python variable name")


def check_wait(args: Any) -> None:
    if args.timeout is not None and not args.wait:
        raise UsageError("--timeout only applies with --wait")
