"""`jupyter px run / runs / status / logs / follow / stop`: start runs and watch them from a terminal.

Every command goes through the run service (`jupyter_px.service`) over the same run store as
the notebook magics and the API, so a run started from a kernel can be followed or stopped here
and the other way round. `runs`, `status` and `logs` only read: a run whose owner (supervisor,
follower) is gone is reported, not repaired; `follow` and `run --wait` keep the run (reconcile
it until it ends), `stop` stops it. Exit codes: 0 success, 1 the
run did not succeed, 2 bad input (no such script or run, invalid topology, a request the
backend cannot meet), 130 interrupted; errors are one readable message, never a traceback.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from .. import backend_table
from .common import CliError, RunParser, guarded, load_topology

# ---- shared helpers ----------------------------------------------------------------------------

#: Where to read a failed replica's log, in failure reports.
LOGS_HINT = "jupyter px logs {run_id} --role {role} --index {index}"


def _service():
    from ..service import RunService

    return RunService()


def _open_run(ref: str) -> tuple[Any, str]:
    """(the service, the run id the user means: an id, a name or `last`), or CliError."""
    from ..service import RunNotFound

    service = _service()
    try:
        return service, service.resolve(ref)
    except RunNotFound as error:
        raise CliError(f"{error} (list runs with: jupyter px runs)") from None


def _warn_owner(run_id: str, problem: str | None) -> None:
    if problem:
        from ..presentation.text import owner_warning

        print(owner_warning(run_id, problem), file=sys.stderr)


class Progress:
    """One status line on stderr: redrawn in place on a terminal, a new line per change otherwise."""

    def __init__(self, run_id: str, stream: TextIO = sys.stderr, tf_chief: bool = False):
        self.run_id = run_id
        self.tf_chief = tf_chief  # a TensorFlow master is `chief` (presentation.labels)
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

        line = f"{self.run_id} {status.state.value} | {replica_states(status, tf_chief=self.tf_chief)}"
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


def cmd_run(args: argparse.Namespace) -> int:
    from ..presentation.text import topology_problems
    from ..service import BackendError, Overrides, ScriptFile, Submission
    from ..start import start
    from ..topology import TopologyError

    script = Path(args.script)
    if not script.is_file():
        raise CliError(
            f"script {args.script!r} does not exist" if not script.exists() else f"script {args.script!r} is not a file"
        )
    if args.workdir is not None and not Path(args.workdir).is_dir():
        raise CliError(f"--workdir {args.workdir!r} is not a directory")
    topology = load_topology(args.file)
    service = _service()
    try:
        started = start(
            Submission(
                ScriptFile(script),
                topology,
                Overrides(framework=args.framework, workers=args.workers, ps=args.ps, backend=args.backend),
                name=args.name,
                workdir=args.workdir,
                args=tuple(args.script_args),
                language=args.language,
                origin="cli",
                cold=args.cold,
            ),
            runs=service,
        )
    except TopologyError as error:
        raise CliError(topology_problems(error)) from None
    except BackendError as error:
        raise CliError(str(error)) from None
    except OSError as error:
        if error.errno == errno.ENOSPC:  # nothing was left of the run (the store publishes whole runs)
            raise CliError(f"no space left under PX_HOME ({service.home}): free some disk space") from None
        raise CliError(str(error)) from None
    except ValueError as error:
        raise CliError(str(error)) from None
    if started.is_sweep:  # the file has a sweep section: `jupyter px sweep run` from here on
        from .sweep_cmds import started_sweep

        return started_sweep(service, started, args.wait)
    run_id = started.id
    if not args.wait:
        print(run_id)
        print(f"follow it with: jupyter px follow {run_id}", file=sys.stderr)
        return 0
    backend = service.record(run_id).backend
    print(f"run {run_id} submitted ({backend}); Ctrl-C stops waiting, not the run", file=sys.stderr)
    return _keep_and_stream(service, run_id)


def _keep_and_stream(service: Any, run_id: str) -> int:
    """Keep the run until it ends (reconciling it: a gone supervisor makes it Lost, a Kubernetes
    run nobody follows is followed again), streaming every replica's log; the exit code."""
    from ..presentation.follow import LogPrinter, follow_run
    from ..presentation.labels import ReplicaNames
    from ..presentation.text import failure_text, outcome_line
    from ..service import RunDamaged, RunNotFound, RunState

    names = ReplicaNames.of(service.record(run_id).topology)
    progress = Progress(run_id, tf_chief=names.tf_chief)
    replicas = service.replicas(run_id, service.keep(run_id))
    printer = LogPrinter(service, run_id, replicas, sys.stdout, prefixed=True, before_write=progress.clear, names=names)
    try:
        status, _ = follow_run(
            lambda: (service.keep(run_id), None), printer, on_status=lambda status, _wrote: progress.show(status)
        )
    except KeyboardInterrupt:
        progress.clear()
        print(f"\nstopped waiting; run {run_id} goes on (stop it with: jupyter px stop {run_id})", file=sys.stderr)
        return 130
    except (RunNotFound, RunDamaged, FileNotFoundError):
        progress.clear()
        if service.exists(run_id):
            raise  # damaged, not deleted: `_guarded` says how
        print(f"run {run_id} was deleted while it was followed", file=sys.stderr)
        return 1
    progress.clear()
    if status.state == RunState.SUCCEEDED:
        print(outcome_line(status, names), file=sys.stderr)
        return 0
    print(failure_text(status, LOGS_HINT, names=names), file=sys.stderr)
    return 1


def cmd_follow(args: argparse.Namespace) -> int:
    """Keep a run until it ends, streaming its logs (what `run --wait` does after submitting)."""
    service, run_id = _open_run(args.run)
    return _keep_and_stream(service, run_id)


# ---- runs / status -----------------------------------------------------------------------------


def cmd_runs(args: argparse.Namespace) -> int:
    from ..presentation.colors import use_color
    from ..presentation.text import RUNS_HEADERS, runs_rows, state_painter, table
    from ..service.views import run_summary
    from ..sweeps.view import group_trials, with_sweep_links

    service = _service()
    views = service.list_runs(limit=args.limit)
    summaries = with_sweep_links(views, [run_summary(v.record, v.status, v.owner_problem) for v in views])
    if args.json:
        print(json.dumps(summaries, indent=1))
        return 0
    if not summaries:
        print(f"no runs yet in {service.root} (start one with: jupyter px run SCRIPT -f TOPOLOGY)")
        return 0
    rows = group_trials(views, runs_rows(summaries))
    print(table(RUNS_HEADERS, rows, paint=state_painter(2, use_color(sys.stdout))))
    for summary in summaries:
        _warn_owner(summary["run_id"], summary["owner_problem"])
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from ..presentation.colors import use_color
    from ..presentation.labels import is_tf_chief
    from ..presentation.text import STATUS_HEADERS, state_painter, status_heading, status_rows, table
    from ..service.views import run_detail

    service, run_id = _open_run(args.run)
    view = service.view(run_id)
    if args.json:
        print(json.dumps(run_detail(view.record, view.status, view.owner_problem), indent=1))
        return 0
    print(status_heading(view.status))
    if view.status.replicas:
        rows = status_rows(view.status, tf_chief=is_tf_chief(view.record.topology))
        print(table(STATUS_HEADERS, rows, paint=state_painter(1, use_color(sys.stdout))))
    _warn_owner(run_id, view.owner_problem)
    return 0


# ---- logs / stop -------------------------------------------------------------------------------


def _select_replicas(
    replicas: list[tuple[str, int]], run_id: str, role: str | None, index: int | None, names: Any
) -> list[tuple[str, int]]:
    """The replicas `--role`/`--index` pick; a role as the job calls it (`chief`) or as stored."""
    if index is not None and role is None:
        raise CliError("--index needs --role (e.g. --role worker --index 1)")
    stored = names.stored_role(role) if role is not None else None
    chosen = [(r, i) for r, i in replicas if (stored is None or r == stored) and (index is None or i == index)]
    if not chosen:
        have = ", ".join(f"{names.role(r)}.{i}" for r, i in replicas)
        wanted = role if index is None else f"{role}.{index}"
        raise CliError(f"run {run_id} has no replica {wanted} (it has {have})")
    return chosen


#: How long a run directory that read as damaged may take to finish disappearing (a deletion under
#: way removes its files one by one: read in between, the run looks damaged, not deleted).
DELETION_SETTLE_S = 2.0


def _going(service: Any, run_id: str) -> bool:
    """Whether run `run_id`, which could not be read, is gone or going (deleted while it was read)."""
    deadline = time.monotonic() + DELETION_SETTLE_S
    while service.exists(run_id):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def cmd_logs(args: argparse.Namespace) -> int:
    """Print (or follow) logs; a run deleted meanwhile ends the command with one line."""
    from ..presentation.follow import LogPrinter, follow_run
    from ..presentation.labels import ReplicaNames
    from ..service import RunDamaged, RunNotFound

    service, run_id = _open_run(args.run)
    names = ReplicaNames.of(service.record(run_id).topology)
    chosen = _select_replicas(service.replicas(run_id), run_id, args.role, args.index, names)
    prefixed = len(chosen) > 1 or args.role is None
    printer = LogPrinter(service, run_id, chosen, sys.stdout, prefixed=prefixed, names=names)

    def observe():
        observation = service.observe(run_id)
        return observation.status, observation.owner_problem

    try:
        _, problem = follow_run(observe, printer, follow=args.follow)
    except KeyboardInterrupt:
        return 130
    except (RunNotFound, RunDamaged, FileNotFoundError):
        if not _going(service, run_id):
            raise  # damaged, not deleted: `_guarded` says how
        print(f"jupyter px logs: run {run_id} was deleted while its logs were printed", file=sys.stderr)
        return 1
    if args.follow:  # a read cannot finish a run nobody owns: say so instead of waiting forever
        _warn_owner(run_id, problem)
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    from ..presentation.text import printable
    from ..service import BackendError

    service, run_id = _open_run(args.run)
    before = service.status(run_id)
    try:
        if before.state.finished:  # what it left on a cluster (an operator's finished pods) goes
            removed = service.clean(run_id)
            print(f"run {run_id} had already finished: {before.state.value}" + _removed(removed))
            return 0
        status = service.stop(run_id, force=args.force)
    except BackendError as error:
        print(f"jupyter px stop: {error}", file=sys.stderr)
        return 1
    print(f"run {run_id} {status.state.value}" + (f": {printable(status.message)}" if status.message else ""))
    return 0


def _removed(removed: list[str]) -> str:
    return f"; removed from the cluster: {', '.join(removed)}" if removed else ""


# ---- registration ------------------------------------------------------------------------------


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
    commands._parser_class = RunParser
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
    run.add_argument(
        "--backend",
        help=f"where to run: {backend_table.choices_text()} (default: the topology's, else local)",
    )
    run.add_argument("--name", help="a name for the run (its id starts with it)")
    run.add_argument("--workdir", metavar="DIR", help="working directory of the replicas (default: here)")
    run.add_argument(
        "--language",
        choices=["python", "ipython"],
        default="python",
        help="ipython runs the script under IPython, so %%magics and !commands work",
    )
    run.add_argument("--wait", action="store_true", help="stream logs and wait until the run finishes")
    run.add_argument(
        "--cold", action="store_true", help="start every replica afresh, not forked from a warm template (local)"
    )
    run.set_defaults(handler=guarded(cmd_run), script_args=[])

    runs = commands.add_parser(
        "runs",
        help="list runs (newest first)",
        description="List the runs in the store, started from the CLI, notebooks or the API.",
    )
    runs.add_argument("--json", action="store_true", help="machine-readable output")
    runs.add_argument("--limit", type=_count, default=None, metavar="N", help="at most N runs")
    runs.set_defaults(handler=guarded(cmd_runs))

    status = commands.add_parser(
        "status",
        help="a run's state and its replicas",
        description="Show a run's state and, per replica: state, pid, exit code, signal, restarts, reason.",
    )
    status.add_argument("run", metavar="RUN", help=RUN_HELP)
    status.add_argument("--json", action="store_true", help="the run and its replicas as JSON")
    status.set_defaults(handler=guarded(cmd_status))

    logs = commands.add_parser(
        "logs",
        help="print (or follow) replica logs",
        description="Print replica logs; every replica, each line prefixed [role.index], "
        "unless --role/--index pick one.",
    )
    logs.add_argument("run", metavar="RUN", help=RUN_HELP)
    logs.add_argument("--role", help="master (chief: a TensorFlow master), worker, ps or evaluator")
    logs.add_argument("--index", type=_count, help="replica index (with --role)")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing until the run finishes")
    logs.set_defaults(handler=guarded(cmd_logs))

    follow = commands.add_parser(
        "follow",
        help="keep a run until it ends, streaming its logs",
        description="Keep a run until it ends: reconcile it (a run whose local supervisor is gone is recorded "
        "Lost; a Kubernetes run nobody follows gets its follower again) and stream every replica's log like "
        "logs --follow. Exit 0 when the run succeeds, 1 when it does not. The reads (runs, status, logs) never "
        "do this.",
    )
    follow.add_argument("run", metavar="RUN", help=RUN_HELP)
    follow.set_defaults(handler=guarded(cmd_follow))

    stop = commands.add_parser("stop", help="stop a run", description="Stop every replica of a run; it ends Stopped.")
    stop.add_argument("run", metavar="RUN", help=RUN_HELP)
    stop.add_argument(
        "--force",
        action="store_true",
        help="stop it without its supervisor's help (one that hangs): the replicas still get SIGTERM and "
        "the grace to write what they hold",
    )
    stop.set_defaults(handler=guarded(cmd_stop))
