"""`jupyter px warm [status|start|stop]`: the local backend's warm templates.

A template has imported a framework (torch) and the replica runner, so a run's replicas are
forked from it instead of started (see `jupyter_px.backends.local.warm`); TensorFlow's template
keeps a spawn-ahead pool of interpreters that have imported it instead, shown with their memory. `status` (the default)
lists every template with its memory; `start` starts one (or keeps the one running) and waits
until it is ready; `stop` stops them all (runs already started are not touched).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any


def _mib(memory: dict[str, float] | None) -> str:
    if not memory:
        return "-"
    rss, uss, pss = memory["rss_mib"], memory["uss_mib"], memory["pss_mib"]
    return f"{rss:,.0f} MiB resident ({uss:,.0f} MiB its own, {pss:,.0f} MiB proportional)"


def _describe(entry: dict[str, Any]) -> list[str]:
    state = entry.get("state", "?") if entry["running"] else "stopped"
    lines = [f"{entry['key']}  {state}  pid {entry.get('pid')}  ({entry.get('python')})"]
    if entry["running"]:
        lines.append(f"  template: {_mib(entry.get('memory'))}")
        if entry.get("standby_pid"):
            lines.append(f"  standby owner pid {entry['standby_pid']}: {_mib(entry.get('standby_memory'))}")
        owner = entry.get("owner") or {}
        ends = f"the Jupyter server pid {owner.get('pid')}" if owner.get("kind") == "server" else "nobody (detached)"
        stops = entry.get("stops_in_s")
        idle = f"stops after {entry.get('idle_s'):g} s unused" if entry.get("idle_s") else "never stops unused"
        if stops is not None:
            idle += f" (in {stops:,.0f} s)"
        going = len(entry.get("active_owners") or [])
        lines.append(f"  owned by {ends}; {idle}; {going} run(s) it started still going")
        preload = ", ".join(entry.get("preload") or [])
        lines.append(f"  preloaded: {preload} ({entry.get('preloaded_count', 0):,} modules)")
        lines += _pool(entry.get("pool"))
    elif entry.get("error"):
        lines.append(f"  failed: {entry['error']}")
    elif entry.get("stop_reason"):
        stopped = entry.get("stopped_at")
        when = time.strftime("%Y-%m-%d %H:%M:%S ", time.localtime(stopped)) if stopped else ""
        lines.append(f"  stopped {when}: {entry['stop_reason']}")
    return lines


def _pool(pool: dict[str, Any] | None) -> list[str]:
    """A spawn-ahead pool's lines: its size (the last run's), what it imports, each interpreter."""
    if pool is None:
        return []
    members = pool.get("interpreters") or []
    if not pool.get("members"):
        return ["  spawn-ahead pool: empty until a run says its size (the next run starts its replicas cold)"]
    if not pool.get("spawned"):
        return [f"  spawn-ahead pool of {len(pool['members'])}: spawned once the runs this template started have ended"]
    lines = [
        f"  spawn-ahead pool: {len(members)} of {len(pool['members'])} interpreters (the last run's replicas), "
        f"importing {', '.join(pool.get('imports') or [])}"
    ]
    lines += [f"    pid {m['pid']} {m['state']}: {_mib(m.get('memory'))}" for m in members]
    if members:
        total = {k: sum(m["memory"][k] for m in members if m.get("memory")) for k in ("rss_mib", "uss_mib", "pss_mib")}
        lines.append(f"    together: {_mib(total)}")
    return lines


def cmd_status(args: argparse.Namespace) -> int:
    from ..service import warm

    entries = warm.templates()
    if args.json:
        print(json.dumps(entries, indent=1))
        return 0
    if not entries:
        print(
            f"no warm template in {warm.directory()} (one starts with the first run that can use it, "
            "or with: jupyter px warm start)"
        )
        return 0
    for entry in entries:
        print("\n".join(_describe(entry)))
    return 0


def cmd_start(args: argparse.Namespace) -> int:
    from ..service import BackendError, warm

    framework = None if args.framework == "none" else args.framework
    try:
        state = warm.start(framework)
    except (RuntimeError, BackendError) as error:
        print(f"jupyter px warm start: {error}", file=sys.stderr)
        return 1
    print(
        f"{state['key']} ready: pid {state['pid']}, {state.get('preload_s', 0):.1f} s to preload "
        f"{', '.join(state.get('preload') or [])}"
    )
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    from ..service import warm

    stopped = warm.stop()
    print(f"stopped {', '.join(stopped)}" if stopped else "no warm template was running")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "warm",
        help="warm templates of the local backend: status (with memory), start, stop",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    parser.add_argument("--json", action="store_true", help="status as JSON")
    parser.set_defaults(handler=cmd_status)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    status = actions.add_parser("status", help="every template, its state and memory (the default)")
    status.add_argument("--json", action="store_true", help="as JSON")
    status.set_defaults(handler=cmd_status)
    start = actions.add_parser("start", help="start a template and wait until it is ready")
    frameworks = ("pytorch", "tensorflow", "none")
    start.add_argument("--framework", choices=frameworks, default="pytorch", help="default: pytorch")
    start.set_defaults(handler=cmd_start)
    stop = actions.add_parser("stop", help="stop every template (runs already started go on)")
    stop.set_defaults(handler=cmd_stop)
