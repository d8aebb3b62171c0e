"""`jupyter px run / runs / status / logs / stop`: start runs and watch them from a terminal.

Every command reads the same run store as the notebook magics and the API, so a run started from
a kernel can be followed or stopped here and the other way round. Exit codes: 0 success, 1 the
run did not succeed, 2 bad input (no such script or run, invalid topology, a request the
backend cannot meet), 130 interrupted; errors are one readable message, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TextIO


class CliError(Exception):
    """Bad input: printed as `jupyter px CMD: message`, exit code 2."""


class _RunParser(argparse.ArgumentParser):
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


# ---- shared helpers ----------------------------------------------------------------------------

#: Where to read a failed replica's log, in failure reports.
LOGS_HINT = "jupyter px logs {run_id} --role {role} --index {index}"


def _store():
    from ..runstore import RunStore

    return RunStore()


def _open_run(ref: str):
    """The Run the user means (an id, a name or `last`), or CliError naming what is wrong."""
    from ..api import Run
    from ..runstore import RunNotFound

    try:
        return Run(ref, _store())
    except RunNotFound as error:
        raise CliError(f"{error} (list runs with: jupyter px runs)") from None


def _replicas(run, status) -> list[tuple[str, int]]:
    """The run's replicas: from its status, or its topology before the backend wrote any."""
    if status.replicas:
        return [(r.role, r.index) for r in status.replicas]
    from ..topology import TopologyError, parse_topology

    try:
        return [(s.role, s.index) for s in parse_topology(run.record.topology).replicas()]
    except TopologyError:
        return []


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
        from ..presentation.text import replica_states

        line = f"{self.run_id} {status.state.value} | {replica_states(status)}"
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


# ---- run ---------------------------------------------------------------------------------------


def _load_topology(path: str | None):
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


def cmd_run(args: argparse.Namespace) -> int:
    from ..api import submit
    from ..backends import BackendError
    from ..presentation.text import topology_problems
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
        raise CliError(topology_problems(error)) from None
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
    from ..presentation.follow import LogPrinter, follow_run, observed_status
    from ..presentation.text import failure_text, outcome_line
    from ..runstore import RunState

    progress = Progress(run.run_id)
    replicas = _replicas(run, observed_status(run))
    printer = LogPrinter(run.store, run.run_id, replicas, sys.stdout, prefixed=True, before_write=progress.clear)
    try:
        status = follow_run(run, printer, on_status=lambda status, _wrote: progress.show(status))
    except KeyboardInterrupt:
        progress.clear()
        print(
            f"\nstopped waiting; run {run.run_id} goes on (stop it with: jupyter px stop {run.run_id})", file=sys.stderr
        )
        return 130
    progress.clear()
    if status.state == RunState.SUCCEEDED:
        print(outcome_line(status), file=sys.stderr)
        return 0
    print(failure_text(status, LOGS_HINT), file=sys.stderr)
    return 1


# ---- runs / status -----------------------------------------------------------------------------


def _reconciled(store, record, status):
    """A listed run's status as its backend sees it now (unfinished runs only: a finished
    status is final); the stored one when the backend cannot tell."""
    if status.state.finished:
        return status
    from ..backends import BackendError, get_backend

    try:
        return get_backend(record.backend, store).reconcile(record.run_id)
    except (BackendError, OSError, ValueError):  # ValueError: RunDamaged since it was listed
        return status


def cmd_runs(args: argparse.Namespace) -> int:
    from ..presentation.run_json import run_summary
    from ..presentation.text import RUNS_HEADERS, runs_rows, table

    store = _store()
    summaries = [
        run_summary(record, _reconciled(store, record, status)) for record, status in store.list(limit=args.limit)
    ]
    if args.json:
        print(json.dumps(summaries, indent=1))
        return 0
    if not summaries:
        print(f"no runs yet in {store.root} (start one with: jupyter px run SCRIPT -f TOPOLOGY)")
        return 0
    print(table(RUNS_HEADERS, runs_rows(summaries)))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from ..presentation.follow import observed_status
    from ..presentation.run_json import run_detail
    from ..presentation.text import STATUS_HEADERS, status_heading, status_rows, table

    run = _open_run(args.run)
    status = observed_status(run)
    if args.json:
        print(json.dumps(run_detail(run.record, status), indent=1))
        return 0
    print(status_heading(status))
    if status.replicas:
        print(table(STATUS_HEADERS, status_rows(status)))
    return 0


# ---- logs / stop -------------------------------------------------------------------------------


def _select_replicas(run, status, role: str | None, index: int | None) -> list[tuple[str, int]]:
    replicas = _replicas(run, status)
    if index is not None and role is None:
        raise CliError("--index needs --role (e.g. --role worker --index 1)")
    chosen = [(r, i) for r, i in replicas if (role is None or r == role) and (index is None or i == index)]
    if not chosen:
        have = ", ".join(f"{r}.{i}" for r, i in replicas)
        wanted = role if index is None else f"{role}.{index}"
        raise CliError(f"run {status.run_id} has no replica {wanted} (it has {have})")
    return chosen


def cmd_logs(args: argparse.Namespace) -> int:
    from ..presentation.follow import LogPrinter, follow_run, observed_status

    run = _open_run(args.run)
    chosen = _select_replicas(run, observed_status(run), args.role, args.index)
    prefixed = len(chosen) > 1 or args.role is None
    printer = LogPrinter(run.store, run.run_id, chosen, sys.stdout, prefixed=prefixed)
    try:
        follow_run(run, printer, follow=args.follow)
    except KeyboardInterrupt:
        return 130
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    from ..backends import BackendError
    from ..presentation.follow import observed_status
    from ..presentation.text import printable

    run = _open_run(args.run)
    before = observed_status(run)
    if before.state.finished:
        print(f"run {run.run_id} had already finished: {before.state.value}")
        return 0
    try:
        status = run.stop()
    except BackendError as error:
        print(f"jupyter px stop: {error}", file=sys.stderr)
        return 1
    print(f"run {run.run_id} {status.state.value}" + (f": {printable(status.message)}" if status.message else ""))
    return 0


# ---- registration ------------------------------------------------------------------------------


def _guarded(handler):
    """Turn CliError (bad input) and RunDamaged (a run directory that cannot be read) into one
    message and exit code 2."""
    from ..runstore import RunDamaged

    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except (CliError, RunDamaged) as error:
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


RUN_HELP = "a run id, a run name (its newest run) or 'last'"


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
        description="List the runs in the store, started from the CLI, notebooks or the API.",
    )
    runs.add_argument("--json", action="store_true", help="machine-readable output")
    runs.add_argument("--limit", type=_count, default=None, metavar="N", help="at most N runs")
    runs.set_defaults(handler=_guarded(cmd_runs))

    status = commands.add_parser(
        "status",
        help="a run's state and its replicas",
        description="Show a run's state and, per replica: state, pid, exit code, signal, restarts, reason.",
    )
    status.add_argument("run", metavar="RUN", help=RUN_HELP)
    status.add_argument("--json", action="store_true", help="the run and its replicas as JSON")
    status.set_defaults(handler=_guarded(cmd_status))

    logs = commands.add_parser(
        "logs",
        help="print (or follow) replica logs",
        description="Print replica logs; every replica, each line prefixed [role.index], "
        "unless --role/--index pick one.",
    )
    logs.add_argument("run", metavar="RUN", help=RUN_HELP)
    logs.add_argument("--role", help="master, worker, ps or evaluator")
    logs.add_argument("--index", type=_count, help="replica index (with --role)")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing until the run finishes")
    logs.set_defaults(handler=_guarded(cmd_logs))

    stop = commands.add_parser("stop", help="stop a run", description="Stop every replica of a run; it ends Stopped.")
    stop.add_argument("run", metavar="RUN", help=RUN_HELP)
    stop.set_defaults(handler=_guarded(cmd_stop))
