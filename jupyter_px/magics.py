"""IPython magics: define a topology, submit notebook code as a distributed run, watch it.

    %load_ext jupyter_px
    %%px_topology cluster              <- polyaxonfile YAML (either form)
    %%px_distributed -t cluster --wait <- this cell's code runs in every replica
    %px_runs / %px_status RUN / %px_logs RUN / %px_stop RUN / %px_attach RUN
    %px_plot RUN [METRIC ...] / %px_tensorboard RUN [RUN ...] / %px_topology_form [NAME]

Every magic is named `px_*` (never `%px` / `%%px`, which belong to ipyparallel), takes its
arguments through `magic_arguments` (so `%px_logs?` shows the help), and reports bad input as a
`UsageError`: IPython prints it as one line without a traceback, and a notebook run by nbclient
or "Run all" still stops at it.

The magics are thin: topologies are parsed by `jupyter_px.topology`, runs are submitted and read
through `jupyter_px.api`, code is found and checked by `jupyter_px.notebook_code`, and what is
shown comes from `jupyter_px.widgets`.
"""

from __future__ import annotations

import html
import os
import re
import sys
import time
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from .topology import Topology, TopologyError, apply_overrides, parse_topology, summary_html, summary_text
from .topology.registry import UnknownTopology, check_topology_name, topologies

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

#: Which magic option set which field, so an invalid override is reported as the option.
_OPTION_FIELDS = {
    "framework": "--framework",
    "backend": "--backend",
    "environment.replicas.n_workers": "--workers",
    "environment.replicas.n_ps": "--ps",
}


class _Shown:
    """Something displayed as HTML in a notebook and as text in a terminal."""

    def __init__(self, text: str, html_text: str):
        self.text, self.html = text, html_text

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return self.html


def _topology_problems(error: TopologyError, given: dict[str, Any] | None = None) -> str:
    """One line per problem, each naming its field path (or the option that set it)."""
    lines = []
    for problem in error.problems:
        option = _OPTION_FIELDS.get(problem.path)
        if given and option and given.get(option) is not None:
            lines.append(f"{option} {given[option]}: {problem.message}")
        else:
            lines.append(str(problem))
    if len(lines) == 1:
        return f"invalid topology: {lines[0]}"
    return f"invalid topology ({len(lines)} problems):\n" + "\n".join(f"  {line}" for line in lines)


def _check_name(name: str | None) -> None:
    if name is not None:
        try:
            check_topology_name(name)
        except ValueError as error:
            raise UsageError(str(error)) from None


def _in_kernel(shell: Any) -> bool:
    """Whether outputs go to a notebook front end (widgets render) rather than a terminal."""
    return getattr(shell, "kernel", None) is not None


@magics_class
class PxMagics(Magics):
    """jupyter-px magics; loaded by `%load_ext jupyter_px`."""

    # ---- topology ----------------------------------------------------------------------------
    @magic_arguments()
    @argument("name", nargs="?", help="save the topology under this name (for %%px_distributed -t NAME)")
    @cell_magic
    def px_topology(self, line: str, cell: str) -> None:
        """Define a topology: the cell is polyaxonfile YAML (current or older form).

        The topology is validated, shown as a table of replicas, saved under NAME (if given)
        and becomes the current topology, used by %%px_distributed when it gets no -t/-f.
        Problems are listed with their field paths, e.g.
        `environment.replicas.worker[3].index: 9 is not below n_workers (7)`.

            %%px_topology cluster
            framework: pytorch
            environment:
              replicas:
                n_workers: 2
        """
        args = parse_argstring(self.px_topology, line)
        _check_name(args.name)
        try:
            topology = parse_topology(cell)
        except TopologyError as error:
            raise UsageError(_topology_problems(error)) from None
        topologies.put(args.name, topology)
        saved = f"saved as {args.name!r}" if args.name else "current topology"
        display(
            _Shown(
                f"{summary_text(topology)}\n({saved})", summary_html(topology) + f"<small>{html.escape(saved)}</small>"
            )
        )

    @magic_arguments()
    @argument("name", nargs="?", help="load this topology name into the form, and save to it")
    @line_magic
    def px_topology_form(self, line: str) -> Any:
        """Show a form to build a topology (framework, replicas, resources, per-index overrides),
        validated as you type; its save button stores it under a name for %%px_distributed -t.

            %px_topology_form cluster
        """
        args = parse_argstring(self.px_topology_form, line)
        from .widgets.topology_form import TopologyForm

        _check_name(args.name)
        form = TopologyForm(name=args.name)
        display(form)

    # ---- submitting --------------------------------------------------------------------------
    @magic_arguments()
    @argument("-t", "--topology", metavar="NAME", help="a topology saved by %%px_topology NAME or the form")
    @argument("-f", "--file", metavar="FILE", help="a topology YAML file")
    @argument("--framework", help="override: tensorflow, pytorch, mxnet, horovod or mpi")
    @argument("--workers", type=int, metavar="N", help="override: number of workers")
    @argument("--ps", type=int, metavar="N", help="override: number of parameter servers")
    @argument("--backend", help="override: local, native or kubeflow")
    @argument("--name", metavar="RUN", help="a name for the run (its id starts with it)")
    @argument("--wait", action="store_true", help="block until the run ends; an error if it did not succeed")
    @argument("--timeout", type=float, metavar="SECONDS", help="with --wait: give up waiting after this long")
    @argument("--notebook", action="store_true", help="ship the notebook's code cells up to this one, then this cell")
    @argument("--push", metavar="a,b", help="ship these notebook values to the replicas (pickled)")
    @argument("-o", "--output", metavar="VAR", help="store the Run in this variable")
    @cell_magic
    def px_distributed(self, line: str, cell: str) -> None:
        """Run this cell's code as a distributed job; returns at once with a live monitor.

        Every replica runs the code with its environment set (TF_CONFIG, MASTER_ADDR/RANK/...,
        PX_* ; see the README). The topology is -t NAME, -f FILE, or else the current one
        (the last %%px_topology); --framework/--workers/--ps/--backend override it.

        The code must define what it uses: values from earlier cells are not there unless
        shipped with --push (names read but not defined are reported before anything starts),
        or use --notebook to ship the notebook's earlier code cells too. IPython syntax
        (%magics, !commands) runs under an IPython shell in each replica.

            %%px_distributed -t cluster --workers 4 --name mnist --wait -o run
            import torch.distributed as dist
            ...
        """
        args = parse_argstring(self.px_distributed, line)
        if args.topology and args.file:
            raise UsageError("give either -t NAME or -f FILE, not both")
        if args.output is not None and not _IDENTIFIER.match(args.output):
            raise UsageError(f"-o {args.output!r}: not a valid Python variable name")
        if args.timeout is not None and not args.wait:
            raise UsageError("--timeout only applies with --wait")
        topology = self._topology_for(args)
        shipped = self._code_for(args, cell)
        push = self._pushed_values(args.push)
        from .notebook_code import missing_names

        missing = missing_names(shipped.source, self.shell.user_ns, self.shell.user_ns_hidden, push)
        if missing:
            raise UsageError(f"not submitted: {missing.message()}")
        run = self._submit(topology, shipped, args, push)
        if args.output:
            self.shell.user_ns[args.output] = run
        monitor = self._show_run(run)
        if args.wait:
            self._wait(run, monitor, args.timeout)

    def _topology_for(self, args: Any) -> Topology:
        if args.topology:
            try:
                base: Topology | None = topologies.require(args.topology)
            except UnknownTopology as error:
                raise UsageError(str(error)) from None
        elif args.file:
            try:
                with open(os.path.expanduser(args.file), encoding="utf-8") as handle:
                    text = handle.read()
            except OSError as error:
                raise UsageError(
                    f"-f {args.file!r}: cannot read the topology file: {error.strerror or error}"
                ) from None
            try:
                base = parse_topology(text)
            except TopologyError as error:
                raise UsageError(f"-f {args.file}: " + _topology_problems(error)) from None
        else:
            base = topologies.current
        given = {"--framework": args.framework, "--workers": args.workers, "--ps": args.ps, "--backend": args.backend}
        if base is not None and all(value is None for value in given.values()):
            return base
        try:
            return apply_overrides(
                base, framework=args.framework, workers=args.workers, ps=args.ps, backend=args.backend
            )
        except TopologyError as error:
            raise UsageError(_topology_problems(error, given)) from None

    def _code_for(self, args: Any, cell: str):
        from . import notebook_code

        origin = "cell"
        source = notebook_code.strip_px_lines(cell)
        if args.notebook:
            raw = list(self.shell.history_manager.input_hist_raw)
            current = raw[-1] if raw else ""
            path = notebook_code.notebook_path(self.shell.user_ns)
            previous = notebook_code.cells_from_file(path, current) if path is not None else None
            if previous is not None:
                origin = f"notebook:{path}"
            else:
                if path is not None:
                    print(
                        f"{path.name}: this cell is not in the saved file (unsaved changes?); "
                        "shipping the cells this kernel ran instead",
                        file=sys.stderr,
                    )
                previous = notebook_code.cells_from_history(raw)
                origin = "notebook:history"
            source = notebook_code.notebook_source(previous, cell)
        if not source.strip():
            raise UsageError("the cell is empty: write the training code below the %%px_distributed line")
        shipped = notebook_code.transform(source)
        try:
            compile(shipped.source, "<px_distributed>", "exec")
        except SyntaxError as error:
            raise UsageError(
                f"the code does not compile: line {error.lineno}: {error.msg}"
                + (f": {error.text.strip()}" if error.text else "")
            ) from None
        return notebook_code.ShippedCode(shipped.source, shipped.language, origin)

    def _pushed_values(self, names_text: str | None) -> dict[str, Any]:
        if not names_text:
            return {}
        from .notebook_code import local_references

        values = {}
        for name in (part.strip() for part in names_text.split(",")):
            if not name:
                continue
            if not _IDENTIFIER.match(name):
                raise UsageError(f"--push {name!r}: not a variable name")
            if name not in self.shell.user_ns:
                raise UsageError(f"--push {name}: no variable {name!r} in this notebook")
            value = self.shell.user_ns[name]
            local = local_references(value)
            if local:
                raise UsageError(
                    f"--push {name}: it refers to {', '.join(local)} defined in this notebook, which pickle "
                    "ships by name only and the replicas do not have; define it in the cell instead"
                )
            values[name] = value
        return values

    def _submit(self, topology: Topology, shipped: Any, args: Any, push: dict[str, Any]):
        from .api import PushError, submit
        from .backends import BackendError

        try:
            return submit(
                shipped.source,
                topology,
                name=args.name,
                language=shipped.language,
                push=push or None,
                submitted_from="magic",
                source=shipped.origin,
                workdir=os.getcwd(),
            )
        except TopologyError as error:
            raise UsageError(_topology_problems(error)) from None
        except PushError as error:
            raise UsageError(f"--push: {error}") from None
        except BackendError as error:
            raise UsageError(f"not submitted: {error}") from None
        except ValueError as error:  # e.g. an invalid --name
            raise UsageError(f"not submitted: {error}") from None

    def _show_run(self, run: Any):
        """The live monitor in a notebook; a status line in a terminal."""
        if _in_kernel(self.shell):
            from .widgets.run_monitor import RunMonitor

            monitor = RunMonitor(run)
            display(monitor)
            return monitor
        print(
            f"submitted run {run.run_id} ({run.record.backend}, {_replica_count(run)} replicas); "
            f"see %px_status {run.run_id}"
        )
        return None

    def _wait(self, run: Any, monitor: Any, timeout: float | None) -> None:
        from .runstore import RunState

        try:
            status = run.wait(timeout=timeout)
        except KeyboardInterrupt:  # the monitor keeps updating: only the waiting stops
            print(f"stopped waiting; run {run.run_id} goes on (%px_stop {run.run_id} stops it)", file=sys.stderr)
            return
        except TimeoutError as error:
            raise UsageError(f"{error}; it goes on (%px_stop {run.run_id} stops it)") from None
        if monitor is not None:
            monitor.stop_updates()
            status = monitor.refresh()  # the final state, in the widget before the cell ends
        if status.state != RunState.SUCCEEDED:
            raise UsageError(_failure_line(status))
        if monitor is None:
            print(f"run {run.run_id} {status.state.value}")

    # ---- runs --------------------------------------------------------------------------------
    def _run(self, token: str):
        """A Run by id, or the newest run with that name; a UsageError naming it otherwise."""
        from .api import Run
        from .runstore import RunNotFound, RunStore

        store = RunStore()
        try:
            return Run(token, store)
        except RunNotFound:
            pass
        for record, _status in store.list():
            if record.name == token:
                return Run(record.run_id, store)
        raise UsageError(f"unknown run {token!r} (no such run id or name in {store.root}; %px_runs lists them)")

    @magic_arguments()
    @argument("--limit", type=int, default=20, metavar="N", help="show the newest N runs (default 20, 0 for all)")
    @line_magic
    def px_runs(self, line: str) -> None:
        """List runs (from magics, the CLI or the sidebar), newest first: id, name, state,
        backend, replicas, when submitted, duration."""
        args = parse_argstring(self.px_runs, line)
        from .runstore import RunStore

        pairs = RunStore().list(limit=args.limit or None)
        headers = ("run", "name", "state", "backend", "replicas", "submitted", "duration", "from")
        rows = []
        for record, status in pairs:
            end = status.finished_at or time.time()
            start = status.started_at or record.created_at
            rows.append(
                (
                    record.run_id,
                    record.name or "",
                    status.state.value,
                    record.backend,
                    str(len(status.replicas) or _count(record.topology)),
                    time.strftime("%Y-%m-%d %H:%M", time.localtime(record.created_at)),
                    _duration(end - start),
                    record.submitted_from or "",
                )
            )
        if not rows:
            print("no runs yet")
            return
        display(_table(headers, rows))

    @magic_arguments()
    @argument("run", help="run id (or name)")
    @line_magic
    def px_status(self, line: str) -> None:
        """Show a run's state and each replica's state, restarts, exit code and reason."""
        args = parse_argstring(self.px_status, line)
        run = self._run(args.run)
        status = run.status()
        rows = [
            (
                r.key,
                r.state.value,
                str(r.restarts),
                "-" if r.exit_code is None else str(r.exit_code),
                " ".join(x for x in (r.reason, r.message) if x),
            )
            for r in status.replicas
        ]
        title = f"run {run.run_id}: {status.state.value}" + (f" ({status.message})" if status.message else "")
        display(_table(("replica", "state", "restarts", "exit code", "reason"), rows, title=title))

    @magic_arguments()
    @argument("run", help="run id (or name)")
    @argument("--role", default=None, help="master, worker, ps or evaluator (default: the first replica)")
    @argument("--index", type=int, default=0, metavar="N", help="replica index (default 0)")
    @argument("--follow", action="store_true", help="keep printing new output until the run ends (interrupt to stop)")
    @argument("--tail", type=int, default=None, metavar="BYTES", help="only the last BYTES of the log")
    @line_magic
    def px_logs(self, line: str) -> None:
        """Print a replica's log (stdout and stderr, across restarts)."""
        args = parse_argstring(self.px_logs, line)
        run = self._run(args.run)
        replicas = _replica_keys(run)
        role = args.role or (replicas[0].rsplit("-", 1)[0] if replicas else "master")
        key = f"{role}-{args.index}"
        if replicas and key not in replicas:
            raise UsageError(f"run {run.run_id} has no replica {key} (replicas: {', '.join(replicas)})")
        offset = -args.tail if args.tail else 0
        try:
            if not args.follow:
                text, _ = run.store.read_log(run.run_id, role, args.index, offset=offset)
                sys.stdout.write(text if text else f"(replica {key} of run {run.run_id} has written nothing yet)\n")
                return
            text, offset = run.store.read_log(run.run_id, role, args.index, offset=offset)
            sys.stdout.write(text)
            for chunk in run.backend.logs(run.run_id, role, args.index, offset=offset, follow=True):
                sys.stdout.write(chunk)
                sys.stdout.flush()
        except KeyboardInterrupt:
            print(f"\n(stopped following {key}; the run goes on)")
        except ValueError as error:
            raise UsageError(f"--role {role!r}: {error}") from None

    @magic_arguments()
    @argument("run", help="run id (or name)")
    @line_magic
    def px_stop(self, line: str) -> None:
        """Stop every replica of a run; it ends as Stopped (a finished run is left as it is)."""
        args = parse_argstring(self.px_stop, line)
        run = self._run(args.run)
        before = run.status()
        if before.state.finished:
            print(f"run {run.run_id} had already finished: {before.state.value}")
            return
        status = run.stop()
        print(f"run {run.run_id}: {status.state.value}")

    @magic_arguments()
    @argument("run", help="run id (or name)")
    @argument("-o", "--output", metavar="VAR", help="store the Run in this variable")
    @argument("--wait", action="store_true", help="block until the run ends; an error if it did not succeed")
    @line_magic
    def px_attach(self, line: str) -> None:
        """Show the live monitor of an existing run (e.g. after a kernel restart: runs go on
        without the kernel that started them)."""
        args = parse_argstring(self.px_attach, line)
        if args.output is not None and not _IDENTIFIER.match(args.output):
            raise UsageError(f"-o {args.output!r}: not a valid Python variable name")
        run = self._run(args.run)
        if args.output:
            self.shell.user_ns[args.output] = run
        monitor = None
        if _in_kernel(self.shell):
            from .widgets.run_monitor import RunMonitor

            monitor = RunMonitor(run)
            display(monitor)
        else:
            status = run.status()
            print(
                f"run {run.run_id}: {status.state.value}; "
                + ", ".join(f"{r.key} {r.state.value}" for r in status.replicas)
            )
        if args.wait:
            self._wait(run, monitor, None)

    @magic_arguments()
    @argument("run", help="run id (or name)")
    @argument("metrics", nargs="*", help="metric names to plot (default: all)")
    @line_magic
    def px_plot(self, line: str) -> None:
        """Plot a run's tracked metrics: one panel per metric, one line per replica (a static
        plotly figure, so it stays in the saved notebook and its HTML export)."""
        args = parse_argstring(self.px_plot, line)
        run = self._run(args.run)
        from .runstore.metrics import MetricsReader

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
            raise UsageError(f"run {run.run_id} has no metric {unknown[0]!r} (it has: {', '.join(names)})")
        from .widgets.plots import static_figure

        wanted = args.metrics or names
        figure = static_figure(reader.data, wanted, title=f"run {run.run_id}")
        points = sum(len(trace.x) for trace in figure.data)
        display(
            _figure_bundle(
                figure, f"run {run.run_id}: {', '.join(wanted)} ({len(figure.data)} lines, {points} points)"
            ),
            raw=True,
        )

    @magic_arguments()
    @argument("runs", nargs="+", help="run ids (or names); several runs share one TensorBoard")
    @line_magic
    def px_tensorboard(self, line: str) -> None:
        """Start (or reuse) TensorBoard for runs and show it here, through the Jupyter server's
        proxy (authenticated, and relative to the server's base URL, so it works behind
        JupyterHub)."""
        args = parse_argstring(self.px_tensorboard, line)
        run_ids = [self._run(token).run_id for token in args.runs]
        from .widgets.run_monitor import tensorboard_html

        shown = tensorboard_html(run_ids)
        match = re.search(r"data-url='([^']*)'", shown)
        text = (
            f"TensorBoard: {html.unescape(match.group(1))}"
            if match
            else html.unescape(re.sub(r"<[^>]+>", " ", shown)).strip()
        )
        display({"text/html": shown, "text/plain": text}, raw=True)


# ---- helpers shared by the magics -------------------------------------------------------------


def _duration(seconds: float) -> str:
    from .widgets.run_monitor import _duration as duration

    return duration(seconds)


def _count(topology: dict) -> int:
    try:
        return parse_topology(topology).total_replicas()
    except TopologyError:
        return 0


def _replica_count(run: Any) -> int:
    return _count(run.record.topology)


def _replica_keys(run: Any) -> list[str]:
    try:
        return [spec.key for spec in parse_topology(run.record.topology).replicas()]
    except TopologyError:
        return [r.key for r in run.status().replicas]


def _failure_line(status: Any) -> str:
    from .api import RunFailed

    bad = [r for r in status.replicas if r.state.value in ("Failed", "Lost")]
    hint = f"; see %px_logs {status.run_id} --role {bad[0].role} --index {bad[0].index}" if bad else ""
    return str(RunFailed(status)) + hint


def _table(headers: tuple[str, ...], rows: list[tuple[str, ...]], title: str = "") -> _Shown:
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=False)).rstrip() for row in [headers, *rows]]
    text = (title + "\n" if title else "") + "\n".join(lines)
    head = "".join(f"<th style='text-align:left'>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td style='text-align:left'>{html.escape(str(c))}</td>" for c in row) + "</tr>"
        for row in rows
    )
    caption = f"<b>{html.escape(title)}</b>" if title else ""
    return _Shown(text, f"<div>{caption}<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")


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


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext jupyter_px`."""
    ipython.register_magics(PxMagics)


def unload_ipython_extension(ipython: Any) -> None:
    """`%unload_ext jupyter_px`: nothing to undo beyond IPython's own bookkeeping."""
