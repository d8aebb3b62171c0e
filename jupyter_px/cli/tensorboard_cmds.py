"""`jupyter px tensorboard list|stop`: the TensorBoard servers jupyter-px started on this machine.

They are detached (they outlive the kernel that asked for one) and stop themselves when the
Jupyter server proxying them exits or after an idle time (see `jupyter_px.tensorboard`); these
commands show what is still serving and stop it by hand.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from ..tensorboard import config as tensorboard_config

# The rest of `jupyter_px.tensorboard` and `presentation.text` are imported by the commands that
# use them: the parser is built for every `jupyter px` command (tests/test_cli_imports.py).

LIST_HEADERS = ("KEY", "PID", "PORT", "STARTED", "IDLE", "STOPS WHEN IDLE FOR", "URL", "LOGDIRS")


def _logdirs(info) -> str:
    return ", ".join(f"{name}={path}" if name else path for name, path in sorted(info.logdirs.items()))


def _list(args: argparse.Namespace) -> int:
    from .. import tensorboard
    from ..presentation.text import duration, table, timestamp

    servers = tensorboard.list_servers()
    now = time.time()
    if args.json:
        rows = [
            {
                "key": s.key,
                "pid": s.pid,
                "port": s.port,
                "started": s.started,
                "last_active": tensorboard.last_active(s),
                "idle_timeout": s.idle_timeout,
                "owner_pid": s.owner_pid,
                "url": s.url(),
                "logdirs": s.logdirs,
            }
            for s in servers
        ]
        print(json.dumps(rows, indent=2))
        return 0
    if not servers:
        print("no TensorBoard servers running")
        return 0
    print(
        table(
            LIST_HEADERS,
            [
                (
                    s.key,
                    s.pid,
                    s.port,
                    timestamp(s.started),
                    duration(now - tensorboard.last_active(s)),
                    duration(s.idle_timeout) if s.idle_timeout else "never",
                    s.url(),
                    _logdirs(s),
                )
                for s in servers
            ],
        )
    )
    return 0


def _stop(args: argparse.Namespace) -> int:
    from .. import tensorboard

    servers = tensorboard.list_servers()
    if args.all:
        chosen = servers
    else:
        if not args.servers:
            print(
                "jupyter px tensorboard stop: name a KEY, PORT or PID (jupyter px tensorboard list), or --all",
                file=sys.stderr,
            )
            return 2
        chosen = []
        for ref in args.servers:
            match = [s for s in servers if ref in (s.key, str(s.port), str(s.pid))]
            if not match:
                print(
                    f"jupyter px tensorboard stop: no TensorBoard {ref!r} (not a key, port or pid of "
                    "jupyter px tensorboard list)",
                    file=sys.stderr,
                )
                return 2
            chosen.extend(m for m in match if m not in chosen)
    for info in chosen:
        stopped = tensorboard.stop(info)
        print(f"{'stopped' if stopped else 'already gone'}: TensorBoard {info.key} (pid {info.pid}, port {info.port})")
    if not chosen:
        print("no TensorBoard servers running")
    return 0


def register(commands) -> None:
    group = commands.add_parser(
        "tensorboard",
        help="list or stop the TensorBoard servers jupyter-px started",
        description="TensorBoard servers started by %%px_tensorboard, the monitor's button or the API. "
        f"Each stops itself when the Jupyter server proxying it exits, or after "
        f"${tensorboard_config.IDLE_TIMEOUT_ENV} seconds without use (default "
        f"{tensorboard_config.DEFAULT_IDLE_TIMEOUT_S:g}; 0: never).",
    )
    actions = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="the servers still running")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=_list)
    stopping = actions.add_parser("stop", help="stop servers by key, port or pid")
    stopping.add_argument("servers", nargs="*", metavar="SERVER", help="a key, port or pid from `list`")
    stopping.add_argument("--all", action="store_true", help="stop every server jupyter-px started")
    stopping.set_defaults(handler=_stop)
