"""`jupyter px run / runs / status / logs / stop`: start runs and watch them from a terminal.

Every command reads the same run store as the notebook and the sidebar, so a run started from
a kernel can be followed or stopped here and the other way round. Exit codes: 0 success, 1 the
run did not succeed, 2 bad input (no such script or run, invalid topology, a request the
backend cannot meet), 130 interrupted; errors are one readable message, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

#: How often `--wait` and `--follow` look for new log text and status changes.
POLL_S = 0.1


class CliError(Exception):
    """Bad input: printed as `jupyter px CMD: message`, exit code 2."""


class _RunParser(argparse.ArgumentParser):
    """`run`'s parser: everything after the first `--` goes to the script untouched.

    argparse alone cannot tell `run x.py -- --wait` (an argument for the script) from
    `run x.py --wait` (our option), so the split happens before parsing.
    """

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        args = list(sys.argv[1:] if args is None else args)
        script_args: list[str] = []
        if "--" in args:
            cut = args.index("--")
            args, script_args = args[:cut], args[cut + 1 :]
        namespace, unknown = super().parse_known_args(args, namespace)
        namespace.script_args = script_args
        return namespace, unknown


# ---- shared helpers ----------------------------------------------------------------------------


def _store():
    from ..runstore import RunStore

    return RunStore()


def _open_run(run_id: str):
    """(Run, backend) for an existing run id, or CliError naming what exists."""
    from ..api import Run
    from ..runstore import RunNotFound

    store = _store()
    try:
        run = Run(run_id, store)
    except RunNotFound as error:
        raise CliError(f"{error} (list runs with: jupyter px runs)") from None
    return run


def _status(run):
    """The run's status through its backend (which reconciles), else as stored."""
    from ..backends import BackendError

    try:
        return run.status()
    except BackendError:  # e.g. a run of a backend this installation lacks
        return run.store.status(run.run_id)


def _fmt_time(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def _fmt_duration(start: float | None, end: float | None) -> str:
    if not start:
        return "-"
    seconds = (end or time.time()) - start
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s"


def _table(rows: list[list[str]], out: TextIO = sys.stdout) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)).rstrip() + "\n")


def _prefix(role: str, index: int) -> str:
    return f"[{role}.{index}] "


class LogFollower:
    """New complete lines from a run's replica logs, each tagged with its replica."""

    def __init__(self, store, run_id: str, replicas: Iterable[tuple[str, int]]):
        self.store = store
        self.run_id = run_id
        self.offsets = dict.fromkeys(replicas, 0)
        self.partial = dict.fromkeys(self.offsets, "")

    def poll(self, final: bool = False) -> list[tuple[tuple[str, int], str]]:
        lines = []
        for key in self.offsets:
            text, self.offsets[key] = self.store.read_log(self.run_id, key[0], key[1], self.offsets[key])
            if not text and not (final and self.partial[key]):
                continue
            text = self.partial[key] + text
            *complete, self.partial[key] = text.split("\n")
            if final and self.partial[key]:
                complete.append(self.partial[key])
                self.partial[key] = ""
            lines.extend((key, line) for line in complete)
        return lines


def _print_lines(lines, prefixed: bool, out: TextIO = sys.stdout) -> None:
    for (role, index), line in lines:
        out.write(f"{_prefix(role, index) if prefixed else ''}{line}\n")
    if lines:
        out.flush()


def _summary(status) -> str:
    """`master-0 Running  worker-0 Succeeded ...`, or counts when there are many replicas."""
    if len(status.replicas) <= 8:
        parts = []
        for r in status.replicas:
            extra = f"({r.restarts}r)" if r.restarts else ""
            parts.append(f"{r.key} {r.state.value}{extra}")
        return "  ".join(parts)
    return ", ".join(f"{state} {n}" for state, n in status.counts().items())


class Progress:
    """One status line on stderr: redrawn in place on a terminal, a new line per change otherwise."""

    def __init__(self, run_id: str, stream: TextIO = sys.stderr):
        self.run_id = run_id
        self.stream = stream
        self.tty = stream.isatty()
        self.last = ""
        self.shown = False

    def clear(self) -> None:
        if self.tty and self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False

    def show(self, status) -> None:
        line = f"{self.run_id} {status.state.value} | {_summary(status)}"
        if self.tty:
            width = max(20, _terminal_width() - 1)
            self.stream.write("\r\x1b[K" + line[:width])
            self.stream.flush()
            self.shown = True
        elif line != self.last:
            self.stream.write(f"[px] {line}\n")
            self.stream.flush()
        self.last = line


def _terminal_width() -> int:
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns
    except OSError:
        return 100


def _failure_text(status) -> str:
    lines = [f"run {status.run_id} {status.state.value}" + (f": {status.message}" if status.message else "")]
    for r in status.replicas:
        if r.state.value in ("Failed", "Lost"):
            what = r.message or (f"exit code {r.exit_code}" if r.exit_code is not None else "")
            lines.append(f"  {r.key} {r.state.value} ({r.reason or 'unknown'})" + (f": {what}" if what else ""))
            lines.append(f"  its log: jupyter px logs {status.run_id} --role {r.role} --index {r.index}")
    return "\n".join(lines)


# ---- run ---------------------------------------------------------------------------------------


def _load_topology(path: str | None):
    if path is None:
        return None
    from ..topology import TopologyError
    from .topology_cmds import read_topology_file

    try:
        return read_topology_file(path)
    except OSError as error:
        raise CliError(f"cannot read topology file {path!r}: {error.strerror or error}") from None
    except TopologyError as error:
        raise CliError(_topology_problems(error, path)) from None


def _topology_problems(error, where: str | None = None) -> str:
    problems = error.problems
    head = f"invalid topology{f' in {where}' if where else ''} ({len(problems)} problem{'s' if len(problems) != 1 else ''}):"
    return "\n".join([head, *(f"  {p.path + ': ' if p.path else ''}{p.message}" for p in problems)])


def cmd_run(args: argparse.Namespace) -> int:
    from ..api import submit
    from ..backends import BackendError
    from ..topology import TopologyError

    script = Path(args.script)
    if not script.is_file():
        raise CliError(
            f"script {args.script!r} does not exist" if not script.exists() else f"script {args.script!r} is not a file"
        )
    if args.workdir is not None and not Path(args.workdir).is_dir():
        raise CliError(f"--workdir {args.workdir!r} is not a directory")
    topology = _load_topology(args.file)
    try:
        run = submit(
            script,
            topology,
            name=args.name,
            backend=args.backend,
            framework=args.framework,
            workers=args.workers,
            ps=args.ps,
            workdir=args.workdir,
            args=args.script_args,
            language=args.language,
            submitted_from="cli",
        )
    except TopologyError as error:
        raise CliError(_topology_problems(error)) from None
    except BackendError as error:
        raise CliError(str(error)) from None
    except (ValueError, OSError) as error:
        raise CliError(str(error)) from None
    if not args.wait:
        print(run.run_id)
        print(f"follow it with: jupyter px logs {run.run_id} --follow", file=sys.stderr)
        return 0
    print(f"run {run.run_id} submitted ({run.record.backend}); Ctrl-C stops waiting, not the run", file=sys.stderr)
    return _wait_and_stream(run)


def _wait_and_stream(run) -> int:
    status = run.status()
    follower = LogFollower(run.store, run.run_id, [(r.role, r.index) for r in status.replicas])
    progress = Progress(run.run_id)
    try:
        while True:
            status = run.status()
            finished = status.state.finished
            lines = follower.poll(final=finished)
            if lines:
                progress.clear()
                _print_lines(lines, prefixed=True)
            progress.show(status)
            if finished:
                break
            time.sleep(POLL_S)
    except KeyboardInterrupt:
        progress.clear()
        print(
            f"\nstopped waiting; run {run.run_id} goes on (stop it with: jupyter px stop {run.run_id})", file=sys.stderr
        )
        return 130
    progress.clear()
    took = _fmt_duration(status.started_at, status.finished_at)
    if status.state.value == "Succeeded":
        print(
            f"run {run.run_id} Succeeded in {took}" + (f": {status.message}" if status.message else ""), file=sys.stderr
        )
        return 0
    print(_failure_text(status), file=sys.stderr)
    return 1


# ---- runs / status -----------------------------------------------------------------------------


def _run_summary(record, status) -> dict:
    return {
        "run_id": record.run_id,
        "name": record.name,
        "state": status.state.value,
        "reason": status.reason,
        "message": status.message,
        "backend": record.backend,
        "submitted_from": record.submitted_from,
        "framework": (record.topology or {}).get("framework"),
        "created_at": record.created_at,
        "started_at": status.started_at,
        "finished_at": status.finished_at,
        "replicas": status.counts(),
    }


def cmd_runs(args: argparse.Namespace) -> int:
    from ..api import runs

    found = runs(_store(), limit=args.limit)
    rows = []
    for run in found:
        status = _status(run)
        rows.append(_run_summary(run.record, status))
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    if not rows:
        print(f"no runs yet in {_store().root} (start one with: jupyter px run SCRIPT -f TOPOLOGY)")
        return 0
    table = [["RUN", "NAME", "STATE", "REPLICAS", "FROM", "CREATED", "DURATION"]]
    for row in rows:
        table.append(
            [
                row["run_id"],
                row["name"] or "-",
                row["state"],
                ", ".join(f"{n} {s}" for s, n in row["replicas"].items()) or "-",
                row["submitted_from"] or "-",
                _fmt_time(row["created_at"]),
                _fmt_duration(row["started_at"], row["finished_at"]),
            ]
        )
    _table(table)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    run = _open_run(args.run)
    status = _status(run)
    if args.json:
        print(status.model_dump_json(indent=1))
        return 0
    head = f"run {status.run_id}: {status.state.value}"
    if status.reason:
        head += f" ({status.reason})"
    if status.message:
        head += f" - {status.message}"
    print(head)
    print(f"started {_fmt_time(status.started_at)}, duration {_fmt_duration(status.started_at, status.finished_at)}")
    rows = [["REPLICA", "STATE", "PID", "EXIT", "SIGNAL", "RESTARTS", "ADDRESS", "REASON", "MESSAGE"]]
    for r in status.replicas:
        rows.append(
            [
                r.key,
                r.state.value,
                str(r.pid or "-"),
                "-" if r.exit_code is None else str(r.exit_code),
                r.signal or "-",
                str(r.restarts),
                r.address or "-",
                r.reason or "-",
                r.message or "",
            ]
        )
    if status.replicas:
        _table(rows)
    return 0


# ---- logs / stop -------------------------------------------------------------------------------


def _select_replicas(status, role: str | None, index: int | None) -> list[tuple[str, int]]:
    replicas = [(r.role, r.index) for r in status.replicas]
    if not replicas:  # not started yet: fall back to the record's topology
        from ..topology import parse_topology

        replicas = [(s.role, s.index) for s in parse_topology(_store().record(status.run_id).topology).replicas()]
    if index is not None and role is None:
        raise CliError("--index needs --role (e.g. --role worker --index 1)")
    chosen = [(r, i) for r, i in replicas if (role is None or r == role) and (index is None or i == index)]
    if not chosen:
        have = ", ".join(f"{r}.{i}" for r, i in replicas)
        wanted = role if index is None else f"{role}.{index}"
        raise CliError(f"run {status.run_id} has no replica {wanted} (it has {have})")
    return chosen


def cmd_logs(args: argparse.Namespace) -> int:
    run = _open_run(args.run)
    status = _status(run)
    chosen = _select_replicas(status, args.role, args.index)
    prefixed = len(chosen) > 1 or args.role is None
    follower = LogFollower(run.store, run.run_id, chosen)
    try:
        while True:
            finished = status.state.finished or not args.follow
            _print_lines(follower.poll(final=finished), prefixed)
            if finished:
                return 0
            time.sleep(POLL_S)
            status = _status(run)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `jupyter px logs RUN | head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def cmd_stop(args: argparse.Namespace) -> int:
    from ..backends import BackendError

    run = _open_run(args.run)
    before = _status(run)
    if before.state.finished:
        print(f"run {run.run_id} had already finished: {before.state.value}")
        return 0
    try:
        status = run.stop()
    except BackendError as error:
        print(f"jupyter px stop: {error}", file=sys.stderr)
        return 1
    print(f"run {run.run_id} {status.state.value}" + (f": {status.message}" if status.message else ""))
    return 0


# ---- registration ------------------------------------------------------------------------------


def _guarded(handler):
    """Turn CliError (bad input) into one message and exit code 2."""

    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except CliError as error:
            print(f"jupyter px {args.command}: {error}", file=sys.stderr)
            return 2

    return run


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative")
    return value


def register(commands) -> None:
    default_class = commands._parser_class  # argparse has no public way to pick one subparser's class
    commands._parser_class = _RunParser
    try:
        run = commands.add_parser(
            "run",
            help="run a script as a distributed job",
            usage="jupyter px run SCRIPT [-f TOPOLOGY] [options] [--wait] [-- SCRIPT_ARGS ...]",
            description="Submit SCRIPT with a topology (a file, and/or --framework/--workers/--ps) and print "
            "the run id; with --wait, stream every replica's log and exit 0 when the run "
            "succeeds, 1 when it does not.",
            epilog="Arguments after -- are passed to the script.",
        )
    finally:
        commands._parser_class = default_class
    run.add_argument("script", metavar="SCRIPT", help="the Python file every replica runs")
    run.add_argument(
        "-f", "--file", metavar="TOPOLOGY", help="topology YAML (polyaxonfile, either form), or - for stdin"
    )
    run.add_argument(
        "--framework",
        choices=["tensorflow", "pytorch", "mxnet", "horovod", "mpi"],
        help="override the topology's framework",
    )
    run.add_argument("--workers", type=_count, metavar="N", help="number of workers")
    run.add_argument("--ps", type=_count, metavar="N", help="number of parameter servers")
    run.add_argument("--backend", help="where to run (default: the topology's, else local)")
    run.add_argument("--name", help="a name for the run (its id starts with it)")
    run.add_argument("--workdir", metavar="DIR", help="working directory of the replicas (default: here)")
    run.add_argument(
        "--language",
        choices=["python", "ipython"],
        default="python",
        help="ipython runs the script under IPython, so %%magics and !commands work",
    )
    run.add_argument("--wait", action="store_true", help="stream logs and wait until the run finishes")
    run.set_defaults(handler=_guarded(cmd_run), script_args=[])

    runs = commands.add_parser(
        "runs",
        help="list runs (newest first)",
        description="List the runs in the store, from the CLI, notebooks or the sidebar.",
    )
    runs.add_argument("--json", action="store_true", help="machine-readable output")
    runs.add_argument("--limit", type=_count, default=None, metavar="N", help="at most N runs")
    runs.set_defaults(handler=_guarded(cmd_runs))

    status = commands.add_parser(
        "status",
        help="a run's state and its replicas",
        description="Show a run's state and, per replica: state, pid, exit code, signal, restarts, reason.",
    )
    status.add_argument("run", metavar="RUN", help="run id")
    status.add_argument("--json", action="store_true", help="the full status as JSON")
    status.set_defaults(handler=_guarded(cmd_status))

    logs = commands.add_parser(
        "logs",
        help="print (or follow) replica logs",
        description="Print replica logs; every replica, each line prefixed [role.index], "
        "unless --role/--index pick one.",
    )
    logs.add_argument("run", metavar="RUN", help="run id")
    logs.add_argument("--role", help="master, worker, ps or evaluator")
    logs.add_argument("--index", type=_count, help="replica index (with --role)")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing until the run finishes")
    logs.set_defaults(handler=_guarded(cmd_logs))

    stop = commands.add_parser("stop", help="stop a run", description="Stop every replica of a run; it ends Stopped.")
    stop.add_argument("run", metavar="RUN", help="run id")
    stop.set_defaults(handler=_guarded(cmd_stop))
