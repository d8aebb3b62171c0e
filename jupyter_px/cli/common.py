"""What the CLI's command modules share: the error that is bad input, the guard that prints
it, the parser that hands what follows `--` to the script, and reading a topology file."""

from __future__ import annotations

import argparse
import sys


class CliError(Exception):
    """Bad input: printed as `jupyter px CMD: message`, exit code 2."""


class RunParser(argparse.ArgumentParser):
    """`run`'s parser: everything after the first `--` goes to the script untouched.

    argparse alone cannot tell `run x.py -- --wait` (an argument for the script) from
    `run x.py --wait` (our option), so the split happens before parsing.
    """

    def parse_known_args(self, args=None, namespace=None):
        args = list(sys.argv[1:] if args is None else args)
        script_args: list[str] = []
        if "--" in args:
            cut = args.index("--")
            args, script_args = args[:cut], args[cut + 1 :]
        namespace, unknown = super().parse_known_args(args, namespace)
        namespace.script_args = script_args
        return namespace, unknown


def load_topology(path: str | None):
    """The topology in the file at `path` (None: none given); CliError naming what is wrong."""
    if path is None:
        return None
    from ..presentation.text import topology_problems
    from ..topology import TopologyError
    from .topology_cmds import read_topology_file

    try:
        return read_topology_file(path)
    except OSError as error:
        raise CliError(f"cannot read topology file {path!r}: {error.strerror or error}") from None
    except TopologyError as error:
        raise CliError(topology_problems(error, path)) from None


def guarded(handler):
    """Turn CliError (bad input) and RunDamaged (a run directory that cannot be read) into one
    message and exit code 2. The run service is imported when the command runs, not when the
    parser is built (which every command does)."""

    def run(args: argparse.Namespace) -> int:
        from ..service import RunDamaged

        try:
            return handler(args)
        except (CliError, RunDamaged) as error:
            print(f"jupyter px {args.command}: {error}", file=sys.stderr)
            return 2

    return run
