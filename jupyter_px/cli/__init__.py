"""`jupyter px ...` (the `jupyter-px` executable).

Each group of subcommands lives in its own module and registers itself on the parser; exit codes:
0 success, 1 the job failed / the run did not succeed, 2 bad input (usage, invalid topology,
a damaged run directory), 130 interrupted, 141 the reader of the output went away.
"""

from __future__ import annotations

import argparse
import os
import sys

from . import (
    chaos_cmds,
    render_cmds,
    run_cmds,
    stacks_cmds,
    sweep_cmds,
    tensorboard_cmds,
    topology_cmds,
    warm_cmds,
)

#: The exit status of a command whose output pipe closed (128 + SIGPIPE, as `cat` would give).
CLOSED_PIPE_EXIT = 141


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jupyter px",
        description="Define, run and watch distributed training jobs (local processes or Kubernetes).",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    topology_cmds.register(commands)
    run_cmds.register(commands)
    stacks_cmds.register(commands)
    render_cmds.register(commands)
    tensorboard_cmds.register(commands)
    sweep_cmds.register(commands)
    warm_cmds.register(commands)
    chaos_cmds.register(commands)
    return parser


def entry() -> int:
    """The `jupyter-px` executable and `python -m jupyter_px.cli`: `main` in a process of its own.

    The official Kubernetes client's package imports kubernetes-validate (and jsonschema with
    it) whenever it is installed, for a manifest `validate` that no command calls: 1.0 s of CPU
    in every command that talks to a cluster, 0.2 s without it. A process of its own runs no one
    else's code, so it declines that import, as a run's follower does
    (`backends/kubernetes/follower/__main__.py`). `main` itself does not: a Jupyter server and
    the tests call it in-process, where someone else may validate manifests."""
    sys.modules.setdefault("kubernetes_validate", None)  # type: ignore[arg-type]
    return main()


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from ..service import StoreUnusable

    try:
        code = int(args.handler(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
    except StoreUnusable as error:  # every command needs the store: one line, whichever it was
        print(f"jupyter px {args.command}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `jupyter px runs | head -1`: the reader has all it wanted. Python's documented way out:
        # point stdout at devnull so the flush at exit does not fail again, and say nothing.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return CLOSED_PIPE_EXIT
    return code


if __name__ == "__main__":
    sys.exit(main())
