"""`jupyter px sweep run | list | status | stop | resume`: sweeps from a terminal, over the same
store as the magics and the API (`jupyter_px.sweeps.service.SweepService`)."""

from __future__ import annotations

import argparse
import json
import sys
import time

from .common import CliError, RunParser, guarded, load_topology

SWEEP_HELP = "a sweep id, a sweep name (its newest sweep) or 'last'"


def _service():
    from ..sweeps.service import SweepService

    return SweepService()


def _resolve(service, ref: str) -> str:
    from ..service import SweepNotFound

    try:
        return service.resolve(ref)
    except SweepNotFound as error:
        raise CliError(f"{error} (list sweeps with: jupyter px sweep list)") from None


def cmd_sweep_run(args: argparse.Namespace) -> int:
    from ..service import BackendError, ScriptFile, Submission
    from ..start import Started
    from ..sweeps.service import NoSweep
    from ..sweeps.spec import parse_polyaxonfile, read_sweep
    from ..topology import TopologyError

    topology = load_topology(args.file)
    service = _service()
    try:
        sweep_id = service.start(
            Submission(
                ScriptFile(args.script),
                topology,
                name=args.name,
                workdir=args.workdir,
                args=tuple(args.script_args),
                language=args.language,
                origin="cli",
            )
        )
        spec = read_sweep(parse_polyaxonfile(topology))
    except (NoSweep, TopologyError, FileNotFoundError, ValueError, BackendError) as error:
        raise CliError(str(error)) from None
    return started_sweep(service.runs, Started("sweep", sweep_id, tuple(spec.notes) if spec else ()), args.wait)


def started_sweep(runs, started, wait: bool) -> int:
    """A sweep just started (`jupyter px sweep run`, or `jupyter px run` of a file with a sweep
    section): its id, its notes (what is not done as written, said once), then, with --wait,
    its progress until it ends."""
    from ..sweeps.service import SweepService

    print(started.id)
    for note in started.notes:
        print(f"note: {note}", file=sys.stderr)
    if not wait:
        print(f"a sweep: see it with jupyter px sweep status {started.id}", file=sys.stderr)
        return 0
    return _follow(SweepService(runs=runs), started.id)


def _follow(service, sweep_id: str) -> int:
    from ..sweeps.view import counts_text

    shown = None
    while True:
        status = service.keep(sweep_id)
        line = f"sweep {sweep_id} {status.state.value}: {counts_text(status)}"
        if line != shown:
            print(line, file=sys.stderr)
            shown = line
        if status.state.finished:
            _print_status(service, sweep_id)
            return 0 if status.state.value == "Succeeded" else 1
        time.sleep(1.0)


def _print_status(service, sweep_id: str) -> None:
    from ..presentation.text import table
    from ..sweeps.view import TRIAL_HEADERS, best_text, counts_text, trial_rows

    view = service.view(sweep_id)
    status = view.status
    print(f"sweep {sweep_id} {status.state.value}" + (f": {status.message}" if status.message else ""))
    print(f"trials: {counts_text(status)}; best: {best_text(status)}")
    if status.trials:
        print(table(TRIAL_HEADERS, trial_rows(status)))
    if view.owner_problem:
        print(f"sweep {sweep_id}: {view.owner_problem}", file=sys.stderr)


def cmd_sweep_status(args: argparse.Namespace) -> int:
    from ..sweeps.view import sweep_json

    service = _service()
    sweep_id = _resolve(service, args.sweep)
    if args.json:
        print(json.dumps(sweep_json(service.view(sweep_id)), indent=1))
        return 0
    _print_status(service, sweep_id)
    return 0


def cmd_sweep_list(args: argparse.Namespace) -> int:
    from ..presentation.text import table
    from ..sweeps.view import SWEEPS_HEADERS, sweep_json, sweep_rows

    service = _service()
    views = service.list()
    if args.json:
        print(json.dumps([sweep_json(v, trials=False) for v in views], indent=1))
        return 0
    if not views:
        print(f"no sweeps yet in {service.root} (start one with: jupyter px sweep run SCRIPT -f TOPOLOGY)")
        return 0
    print(table(SWEEPS_HEADERS, sweep_rows(views)))
    return 0


def cmd_sweep_stop(args: argparse.Namespace) -> int:
    service = _service()
    sweep_id = _resolve(service, args.sweep)
    status = service.stop(sweep_id)
    print(f"sweep {sweep_id} {status.state.value}" + (f": {status.message}" if status.message else ""))
    return 0


def cmd_sweep_resume(args: argparse.Namespace) -> int:
    service = _service()
    sweep_id = _resolve(service, args.sweep)
    try:
        started = service.resume(sweep_id)
    except ValueError as error:
        raise CliError(str(error)) from None
    print(f"sweep {sweep_id}: " + ("its controller started again" if started else "its controller is running"))
    return _follow(service, sweep_id) if args.wait else 0


def register(commands) -> None:
    sweep = commands.add_parser(
        "sweep",
        help="hyperparameter sweeps (a topology's hptuning: or matrix: section)",
        description="Run a sweep: every trial is a whole distributed run of SCRIPT with the trial's values.",
    )
    verbs = sweep.add_subparsers(dest="verb", metavar="VERB", required=True)
    default_class = verbs._parser_class  # `--` passes what follows to the script, as `run` does
    verbs._parser_class = RunParser
    try:
        run = verbs.add_parser(
            "run",
            help="start a sweep",
            usage="jupyter px sweep run SCRIPT -f TOPOLOGY [--name N] [--wait] [-- SCRIPT_ARGS ...]",
            description="Start the sweep of TOPOLOGY's hptuning:/matrix: section over SCRIPT; prints its id. "
            "With --wait, follow it and exit 0 when it succeeds, 1 when it does not.",
        )
    finally:
        verbs._parser_class = default_class
    run.add_argument("script", metavar="SCRIPT")
    run.add_argument("-f", "--file", metavar="TOPOLOGY", required=True, help="the polyaxonfile with the sweep")
    run.add_argument("--name", help="a name for the sweep (its trials are NAME-t0, NAME-t1, ...)")
    run.add_argument("--workdir", metavar="DIR")
    run.add_argument("--language", choices=["python", "ipython"], default="python")
    run.add_argument("--wait", action="store_true", help="follow the sweep until it ends")
    run.set_defaults(handler=guarded(cmd_sweep_run), script_args=[])

    listing = verbs.add_parser("list", help="list sweeps (newest first)")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=guarded(cmd_sweep_list))

    status = verbs.add_parser("status", help="a sweep's state and its trials")
    status.add_argument("sweep", metavar="SWEEP", help=SWEEP_HELP)
    status.add_argument("--json", action="store_true")
    status.set_defaults(handler=guarded(cmd_sweep_status))

    stop = verbs.add_parser("stop", help="stop a sweep and its running trials")
    stop.add_argument("sweep", metavar="SWEEP", help=SWEEP_HELP)
    stop.set_defaults(handler=guarded(cmd_sweep_stop))

    resume = verbs.add_parser("resume", help="start a stopped-by-accident sweep's controller again")
    resume.add_argument("sweep", metavar="SWEEP", help=SWEEP_HELP)
    resume.add_argument("--wait", action="store_true")
    resume.set_defaults(handler=guarded(cmd_sweep_resume))
