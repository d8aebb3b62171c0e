"""`jupyter px kill RUN worker-1 [--signal KILL]`: end one replica on purpose, to see recovery work.

With `termination: {maxRetries: N}` the whole run starts again as the next attempt and each
replica resumes from its newest checkpoint; without, the run fails as it would after a crash.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys

from .common import CliError, guarded

_REPLICA = re.compile(r"^([a-z]{1,16})(?:-(\d{1,6}))?$")


def parse_replica(text: str) -> tuple[str, int]:
    """`worker-1` -> ("worker", 1); `master` -> ("master", 0); `chief` is the master."""
    match = _REPLICA.match(text)
    if match is None:
        raise CliError(f"replica {text!r} is not a replica's name like worker-1 or master")
    role = "master" if match.group(1) == "chief" else match.group(1)
    return role, int(match.group(2) or 0)


def parse_signal(text: str) -> int:
    """`KILL`, `SIGKILL` or `9` -> 9."""
    if text.isdigit():
        try:
            return int(signal.Signals(int(text)))
        except ValueError:
            raise CliError(f"--signal {text}: not a signal number") from None
    name = text.upper()
    name = name if name.startswith("SIG") else f"SIG{name}"
    try:
        return int(signal.Signals[name])
    except KeyError:
        raise CliError(f"--signal {text}: not a signal name (KILL, TERM, SEGV, ...)") from None


def cmd_kill(args: argparse.Namespace) -> int:
    from ..service import BackendError, RunNotFound, RunService

    role, index = parse_replica(args.replica)
    signum = parse_signal(args.signal)
    service = RunService()
    try:
        run_id = service.resolve(args.run)
    except RunNotFound as error:
        raise CliError(f"{error} (list runs with: jupyter px runs)") from None
    try:
        print(service.kill(run_id, role, index, signum))
    except BackendError as error:
        print(f"jupyter px kill: {error}", file=sys.stderr)
        return 1
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    kill = commands.add_parser(
        "kill",
        help="kill one replica of a run (to see recovery work)",
        description="Send a signal to one running replica, as a crash would end it. With "
        "termination.maxRetries the whole run starts again from its newest checkpoints.",
    )
    kill.add_argument("run", metavar="RUN", help="a run id, a run name (its newest run) or `last`")
    kill.add_argument("replica", metavar="REPLICA", help="the replica: worker-1, master, ps-0")
    kill.add_argument("--signal", default="KILL", help="the signal: KILL (default), TERM, SEGV, or a number")
    kill.set_defaults(handler=guarded(cmd_kill))
