"""`jupyter px ...` (the `jupyter-px` executable).

Each group of subcommands lives in its own module and registers itself on the parser; exit codes:
0 success, 1 the job failed / the run did not succeed, 2 bad input (usage, invalid topology).
"""

from __future__ import annotations

import argparse
import sys

from . import k8s_cmds, run_cmds, topology_cmds


class UsageError(Exception):
    """Bad command-line input; printed without a traceback, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jupyter px",
        description="Define, run and watch distributed training jobs (local processes or Kubernetes).",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    topology_cmds.register(commands)
    run_cmds.register(commands)
    k8s_cmds.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except UsageError as error:
        print(f"jupyter px {args.command}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
