"""The magics about existing runs: list, status, logs, stop, attach, plot, TensorBoard.

Runs come from anywhere (magics, the CLI, the API) and are named the way the user
knows them: an id, a name (its newest run) or `last`. What is shown is rendered by
`jupyter_px.presentation`, the same words and tables as `jupyter px ...` in a terminal; none of
these magics but `%px_attach` in a notebook loads ipywidgets.
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
from ..presentation.follow import LogPrinter, follow_run, observed_status
from .args import check_output, check_wait, output_arg, run_arg, wait_args
from .common import in_kernel, open_run, shell_of, show_run, wait_for_run


def _replica_keys(run: Any, status: Any) -> list[tuple[str, int]]:
    from ..topology import TopologyError, parse_topology

    try:
        return [(spec.role, spec.index) for spec in parse_topology(run.record.topology).replicas()]
    except TopologyError:
        return [(r.role, r.index) for r in status.replicas]


def _observed_run(magic: Any, line: str) -> tuple[Any, Any, Any]:
    """A run magic's arguments, the run they name, and its status as observed now (reconciled:
    a run whose supervisor died reads as Lost, not as forever Running)."""
    args = parse_argstring(magic, line)
    run = open_run(args.run)
    return args, run, observed_status(run)


def _figure_bundle(figure: Any, text: str) -> dict[str, Any]:
    """A plotly figure as an output bundle: JupyterLab renders the plotly JSON, exports (nbconvert,
    GitHub) use the HTML, a terminal prints the text. Not `display(figure)`, whose renderer
    depends on guessing the environment (and opens a browser from a terminal)."""
    import json

    return {
        "application/vnd.plotly.v1+json": json.loads(figure.to_json()),
        "text/html": figure.to_html(include_plotlyjs="cdn", full_html=False),
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
        from ..presentation.run_json import run_summary
        from ..runstore import RunStore

        summaries = [run_summary(record, status) for record, status in RunStore().list(limit=args.limit or None)]
        if args.output:
            shell_of(self).user_ns[args.output] = summaries
        if not summaries:
            print("no runs yet")
            return
        rows = as_text.runs_rows(summaries)
        display(
            as_html.TextAndHtml(as_text.table(as_text.RUNS_HEADERS, rows), as_html.table(as_text.RUNS_HEADERS, rows))
        )

    @magic_arguments()
    @run_arg
    @line_magic
    def px_status(self, line: str) -> None:
        """Show a run's state and each replica's state, pid, exit code, restarts and reason."""
        _, run, status = _observed_run(self.px_status, line)
        heading = as_text.status_heading(status)
        rows = as_text.status_rows(status)
        display(
            as_html.TextAndHtml(
                as_text.table(as_text.STATUS_HEADERS, rows, title=heading),
                as_html.table(as_text.STATUS_HEADERS, rows, title=heading),
            )
        )

    @magic_arguments()
    @run_arg
    @argument("--role", default=None, help="master, worker, ps or evaluator (default: the first replica)")
    @argument("--index", type=int, default=0, metavar="N", help="replica index (default 0)")
    @argument("--follow", action="store_true", help="keep printing new output until the run ends (interrupt to stop)")
    @argument("--tail", type=int, default=None, metavar="BYTES", help="only the last BYTES of the log")
    @line_magic
    def px_logs(self, line: str) -> None:
        """Print a replica's log (stdout and stderr, across restarts), streamed in bounded chunks."""
        args, run, status = _observed_run(self.px_logs, line)
        replicas = _replica_keys(run, status)
        role = args.role or (replicas[0][0] if replicas else "master")
        key = (role, args.index)
        if replicas and key not in replicas:
            have = ", ".join(f"{r}-{i}" for r, i in replicas)
            raise UsageError(f"run {run.run_id} has no replica {role}-{args.index} (replicas: {have})")
        printer = LogPrinter(run.store, run.run_id, [key], sys.stdout, prefixed=False)
        try:
            if args.tail:
                size = run.paths.log(role, args.index).stat().st_size if run.paths.log(role, args.index).exists() else 0
                printer.start_at(key, max(0, size - args.tail))
            follow_run(run, printer, follow=args.follow)
        except KeyboardInterrupt:
            print(f"\n(stopped following {role}-{args.index}; the run goes on)")
            return
        except ValueError as error:
            raise UsageError(f"--role {role!r}: {error}") from None
        if printer.offsets[key] == 0:
            print(f"(replica {role}-{args.index} of run {run.run_id} has written nothing yet)")

    @magic_arguments()
    @run_arg
    @line_magic
    def px_stop(self, line: str) -> None:
        """Stop every replica of a run: each gets SIGTERM (its pod is deleted on Kubernetes), then
        SIGKILL after a grace period, and the run ends as Stopped. Its logs and metrics are kept.
        A finished run is left as it is."""
        _, run, before = _observed_run(self.px_stop, line)
        if before.state.finished:
            print(f"run {run.run_id} had already finished: {before.state.value}")
            return
        status = run.stop()
        print(f"run {run.run_id}: {status.state.value}")

    @magic_arguments()
    @run_arg
    @wait_args
    @output_arg("the Run")
    @line_magic
    def px_attach(self, line: str) -> None:
        """Show the live monitor of an existing run (e.g. after a kernel restart: runs go on
        without the kernel that started them)."""
        args = parse_argstring(self.px_attach, line)
        check_output(args)
        check_wait(args)
        run = open_run(args.run)
        if args.output:
            shell_of(self).user_ns[args.output] = run
        monitor = None
        if in_kernel(shell_of(self)):
            monitor = show_run(shell_of(self), run, "")
        else:
            status = observed_status(run)
            print(f"run {run.run_id}: {status.state.value}; {as_text.replica_states(status)}")
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
        from ..runstore.metrics import MetricsReader

        reader = MetricsReader(run.paths)
        reader.poll()
        names = reader.metric_names()
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
        run_ids = [open_run(ref).run_id for ref in args.runs]
        from .. import tensorboard
        from ..presentation.tensorboard import embed

        result = tensorboard.start(run_ids)
        display(embed(result, height=600, label=", ".join(run_ids)))
