"""`jupyter px stacks RUN`: every replica's Python stacks now, grouped by identical stack.

For a job that stops making progress: which rank is elsewhere than the others, at which notebook
cell and line. A running run's replicas are asked now (`RunService.stacks`); a finished run shows
the newest snapshot kept in it (taken on request, or by the supervisor when it noticed a stall).
Exit codes: 0 stacks shown, 2 no such run, no stacks, or a backend that cannot take them.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from .common import CliError, guarded


def _frame_line(frame: dict[str, Any]) -> str:
    where = (
        f"{frame['cell']}, line {frame['cell_line']}" if frame.get("cell") else f"{frame['file']}, line {frame['line']}"
    )
    text = f"    {where}, in {frame['function']}"
    return f"{text}\n      {frame['code']}" if frame.get("code") else text


def render(snapshot: dict[str, Any], every_thread: bool = False) -> str:
    """The grouped stacks as text: a heading, one line per group, then (with `every_thread`) each
    replica's threads, innermost frame first."""
    taken = time.strftime("%H:%M:%S", time.localtime(snapshot["taken_at"]))
    lines = [f"stacks of run {snapshot['run_id']} taken at {taken} ({snapshot['why']})", snapshot["text"]]
    if every_thread:
        for replica in snapshot["replicas"]:
            lines.append(
                f"\n{replica['key']} (pid {replica['pid']}){': ' + replica['error'] if replica['error'] else ''}"
            )
            for thread in replica["threads"]:
                lines.append(f"  thread {thread['ident']}{' (main)' if thread['main'] else ''}:")
                lines.extend(_frame_line(frame) for frame in thread["frames"])
    return "\n".join(lines)


def cmd_stacks(args: argparse.Namespace) -> int:
    from ..service import BackendError, NoStacks, RunNotFound, RunService

    service = RunService()
    try:
        run_id = service.resolve(args.run)
        snapshot = service.stacks(run_id, take=not args.last)
    except RunNotFound as error:
        raise CliError(f"{error} (list runs with: jupyter px runs)") from None
    except (NoStacks, BackendError) as error:
        raise CliError(str(error)) from None
    print(json.dumps(snapshot, indent=1) if args.json else render(snapshot, every_thread=args.all))
    return 0


def register(commands: Any) -> None:
    stacks = commands.add_parser(
        "stacks",
        help="every replica's Python stacks, grouped (a job that hangs)",
        description="Ask every live replica of a run for the Python stack of each of its threads (also one "
        "blocked in native code, such as a collective), group the replicas by identical stack and name the "
        "frames of your code by notebook cell. The snapshot is kept in the run; for a finished run the newest "
        "kept one is shown.",
    )
    stacks.add_argument("run", metavar="RUN", help="a run id, a run name (its newest run) or `last`")
    stacks.add_argument(
        "--last", action="store_true", help="show the newest snapshot kept, without asking the replicas"
    )
    stacks.add_argument("--all", action="store_true", help="every replica's threads in full, after the groups")
    stacks.add_argument("--json", action="store_true", help="the snapshot as JSON")
    stacks.set_defaults(handler=guarded(cmd_stacks))
