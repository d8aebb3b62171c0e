"""The magics about existing runs: list, status, logs, stop, attach, plot, TensorBoard.

Runs come from anywhere (magics, the CLI, the API) and are named the way the user
knows them: an id, a name (its newest run) or `last`. What is shown is rendered by
`jupyter_px.presentation`, the same words and tables as `jupyter px ...` in a terminal; none of
these magics but `%px_attach` in a notebook loads ipywidgets.

Every magic goes through the run service. `%px_runs`, `%px_status`, `%px_logs` only read: a run
whose supervisor (or Kubernetes follower) is gone is shown as recorded, with a warning saying
so; `%px_stop` and `--wait` act.
"""

from __future__ import annotations

import sys
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from ..presentation import html as as_html
from ..presentation import text as as_text
from ..presentation.follow import LogPrinter, follow_run
from ..presentation.labels import ReplicaNames, is_tf_chief
from ..service import BackendError, logged_by_the_code
from .args import check_output, check_wait, output_arg, run_arg, wait_args
from .common import in_kernel, open_run, run_service, shell_of, show_run, wait_for_run

#: How a magic tells the user to bring a run whose owner is gone up to date.
KEEP_HINT = "run.wait() or `jupyter px follow {run_id}`"


def _observed_run(magic: Any, line: str) -> tuple[Any, Any, Any]:
    """A run magic's arguments, the run they name, and what a read sees of it (the stored
    status and any problem with its owner: a read reports a gone supervisor, never repairs it)."""
    args = parse_argstring(magic, line)
    run = open_run(args.run)
    return args, run, run.observe()


def _warn_owner(run_id: str, problem: str | None) -> None:
    if problem:
        print(as_text.owner_warning(run_id, problem, KEEP_HINT), file=sys.stderr)


def _figure_bundle(figure: Any, text: str) -> dict[str, Any]:
    """A plotly figure as an output bundle: JupyterLab renders the plotly JSON, exports (nbconvert,
    GitHub) use the HTML, a terminal prints the text. Not `display(figure)`, whose renderer
    depends on guessing the environment (and opens a browser from a terminal)."""
    from ..presentation.plot_theme import plotly_html, plotly_json

    return {
        "application/vnd.plotly.v1+json": plotly_json(figure),
        "text/html": plotly_html(figure),
        "text/plain": text,
    }


@magics_class
class RunMagics(Magics):
    @magic_arguments()
    @argument("--limit", type=int, default=20, metavar="N", help="show the newest N runs (default 20, 0 for all)")
    @output_arg("the runs' summaries (the JSON shape of `jupyter px runs --json`)")
    @line_magic
    def px_runs(self, line: str) -> None:
        """List runs (from magics, the CLI or the API), newest first: id, name, state,
        backend, replicas, where from, when created, duration."""
        args = parse_argstring(self.px_runs, line)
        check_output(args)
        from ..service.views import run_summary
        from ..sweeps.view import group_trials, with_sweep_links

        views = run_service().list_runs(limit=args.limit or None)
        summaries = with_sweep_links(views, [run_summary(v.record, v.status, v.owner_problem) for v in views])
        if args.output:
            shell_of(self).user_ns[args.output] = summaries
        if not summaries:
            print("no runs yet")
            return
        rows = group_trials(views, as_text.runs_rows(summaries))
        display(
            as_html.TextAndHtml(as_text.table(as_text.RUNS_HEADERS, rows), as_html.table(as_text.RUNS_HEADERS, rows))
        )
        for view in views:
            _warn_owner(view.record.run_id, view.owner_problem)

    @magic_arguments()
    @run_arg
    @line_magic
    def px_status(self, line: str) -> None:
        """Show a run's state and each replica's state, pid, exit code, restarts and reason."""
        _, run, observation = _observed_run(self.px_status, line)
        status = observation.status
        heading = as_text.status_heading(status)
        rows = as_text.status_rows(status, tf_chief=is_tf_chief(run.record.topology))
        display(
            as_html.TextAndHtml(
                as_text.table(as_text.STATUS_HEADERS, rows, title=heading),
                as_html.table(as_text.STATUS_HEADERS, rows, title=heading),
            )
        )
        _warn_owner(run.run_id, observation.owner_problem)

    @magic_arguments()
    @run_arg
    @argument(
        "--role",
        default=None,
        help="master (chief: a TensorFlow master), worker, ps or evaluator (default: the first replica)",
    )
    @argument("--index", type=int, default=0, metavar="N", help="replica index (default 0)")
    @argument("--follow", action="store_true", help="keep printing new output until the run ends (interrupt to stop)")
    @argument("--tail", type=int, default=None, metavar="BYTES", help="only the last BYTES of the log")
    @line_magic
    def px_logs(self, line: str) -> None:
        """Print a replica's log (stdout and stderr, across restarts), streamed in bounded chunks."""
        args, run, observation = _observed_run(self.px_logs, line)
        names = ReplicaNames.of(run.record.topology)
        replicas = run.service.replicas(run.run_id, observation.status)
        role = names.stored_role(args.role) if args.role else (replicas[0][0] if replicas else "master")
        key, label = (role, args.index), names.label(role, args.index)
        if replicas and key not in replicas:
            have = ", ".join(names.label(r, i) for r, i in replicas)
            raise UsageError(f"run {run.run_id} has no replica {args.role or role}-{args.index} (replicas: {have})")
        printer = LogPrinter(run.service, run.run_id, [key], sys.stdout, prefixed=False, names=names)

        def observe() -> Any:
            seen = run.observe()
            return seen.status, seen.owner_problem

        try:
            if args.tail:
                printer.start_at(key, max(0, run.service.log_size(run.run_id, role, args.index) - args.tail))
            _, problem = follow_run(observe, printer, follow=args.follow)
        except KeyboardInterrupt:
            print(f"\n(stopped following {label}; the run goes on)")
            return
        except ValueError as error:
            raise UsageError(f"--role {role!r}: {error}") from None
        if printer.offsets[key] == 0:
            print(f"(replica {label} of run {run.run_id} has written nothing yet)")
        _warn_owner(run.run_id, problem)  # with --follow, why following ended before the run did

    @magic_arguments()
    @run_arg
    @line_magic
    def px_stop(self, line: str) -> None:
        """Stop every replica of a run: each gets SIGTERM (its pod is deleted on Kubernetes), then
        SIGKILL after a grace period, and the run ends as Stopped. Its logs and metrics are kept.
        A finished run keeps its outcome; what it left on a cluster (the finished pods and job an
        operator keeps) is deleted, and named."""
        run = open_run(parse_argstring(self.px_stop, line).run)
        before = run.status()
        if before.state.finished:  # what it left on a cluster (an operator's finished pods) goes
            try:
                removed = run.service.clean(run.run_id)
            except BackendError as error:
                raise UsageError(str(error)) from None
            what = f"; removed from the cluster: {', '.join(removed)}" if removed else ""
            print(f"run {run.run_id} had already finished: {before.state.value}{what}")
            return
        status = run.stop()
        print(f"run {run.run_id}: {status.state.value}")

    @magic_arguments()
    @run_arg
    @wait_args
    @output_arg("the Run")
    @line_magic
    def px_attach(self, line: str) -> None:
        """Show the live monitor of an existing run, or of a sweep (e.g. after a kernel restart:
        runs and sweeps go on without the kernel that started them). A name both a run and a
        sweep have means the run; `last` means the newest run."""
        args = parse_argstring(self.px_attach, line)
        check_output(args)
        check_wait(args)
        if _is_sweep(args.run):
            from .sweeps import open_sweep, show_sweep, wait_for_sweep

            sweep = open_sweep(args.run)
            if args.output:
                shell_of(self).user_ns[args.output] = sweep
            monitor = show_sweep(shell_of(self), sweep, repr(sweep))
            if args.wait:
                wait_for_sweep(sweep, monitor, args.timeout)
            return
        run = open_run(args.run)
        if args.output:
            shell_of(self).user_ns[args.output] = run
        monitor = None
        if in_kernel(shell_of(self)):
            monitor = show_run(shell_of(self), run, "")
        else:
            observation = run.observe()
            status = observation.status
            states = as_text.replica_states(status, tf_chief=is_tf_chief(run.record.topology))
            print(f"run {run.run_id}: {status.state.value}; {states}")
            _warn_owner(run.run_id, observation.owner_problem)
        if args.wait:
            wait_for_run(run, monitor, args.timeout)

    @magic_arguments()
    @run_arg
    @argument("metrics", nargs="*", help="metric names to plot (default: all)")
    @line_magic
    def px_plot(self, line: str) -> None:
        """Plot a run's tracked metrics: one panel per metric, one line per replica (a static
        plotly figure, so it stays in the saved notebook and its HTML export)."""
        args = parse_argstring(self.px_plot, line)
        run = open_run(args.run)
        reader = run.service.metrics_reader(run.run_id)
        names = reader.metric_names()
        if not args.metrics:  # the code's own metrics; the `system/` ones when named
            names = [name for name in names if logged_by_the_code(name)]
        if not names:
            print(
                f"run {run.run_id} has no metrics yet (the training code logs them with "
                "jupyter_px.tracking.log_metrics(step=..., loss=...))"
            )
            return
        unknown = [name for name in args.metrics if name not in names]
        if unknown:
            raise UsageError(
                f"run {run.run_id} has no metric {as_text.printable(unknown[0])!r} (it has: {', '.join(names)})"
            )
        from ..widgets.plots import static_figure

        wanted = args.metrics or names
        figure = static_figure(reader.data, wanted, title=f"run {run.run_id}")
        points = sum(len(trace.x) for trace in figure.data)
        description = f"run {run.run_id}: {', '.join(wanted)} ({len(figure.data)} lines, {points} points)"
        display(_figure_bundle(figure, description), raw=True)

    @magic_arguments()
    @argument("runs", nargs="+", help="run ids, names or 'last'; several runs share one TensorBoard")
    @line_magic
    def px_tensorboard(self, line: str) -> None:
        """Start (or reuse) TensorBoard for runs and show it here, through the Jupyter server's
        proxy (authenticated, and relative to the server's base URL, so it works behind
        JupyterHub)."""
        args = parse_argstring(self.px_tensorboard, line)
        runs = [open_run(ref) for ref in args.runs]
        run_ids = [run.run_id for run in runs]
        from ..presentation.tensorboard import embed

        result = runs[0].service.tensorboard(run_ids)
        display(embed(result, height=600, label=", ".join(run_ids)))


def _is_sweep(ref: str) -> bool:
    """Whether `ref` names a sweep and no run (a run wins: `%px_attach` was about runs first)."""
    from ..service import RunNotFound, SweepNotFound
    from ..sweeps.service import SweepService

    runs = run_service()
    try:
        runs.resolve(ref)
        return False
    except RunNotFound:
        pass
    try:
        SweepService(runs=runs).resolve(ref)
        return True
    except SweepNotFound:
        return False
