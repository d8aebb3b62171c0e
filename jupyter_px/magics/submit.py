"""`%%px_distributed`: run a cell's code as a distributed job."""

from __future__ import annotations

import os
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from .. import backend_table
from ..presentation.text import topology_problems
from ..sweeps.spec import parse_polyaxonfile, read_sweep
from ..topology import Topology, TopologyError, apply_overrides
from ..topology.registry import UnknownTopology, topologies
from .args import IDENTIFIER, check_output, check_wait, output_arg, wait_args
from .common import cell_id, cell_submission, shell_of, show_run, submit_errors, wait_for_run

#: Which magic option set which field, so an invalid override is reported as the option.
OPTION_FIELDS = {
    "framework": "--framework",
    "backend": "--backend",
    "environment.replicas.n_workers": "--workers",
    "environment.replicas.n_ps": "--ps",
}


def _resource(spec: Any) -> list[str]:
    """Hyperband's resource parameter, a global in every trial too."""
    return [spec.resource.name] if spec is not None and spec.resource is not None else []


@magics_class
class SubmitMagics(Magics):
    @magic_arguments()
    @argument("-t", "--topology", metavar="NAME", help="a topology saved by %%px_topology NAME or the form")
    @argument("-f", "--file", metavar="FILE", help="a topology YAML file")
    @argument("--framework", help="override: tensorflow, pytorch, mxnet, horovod or mpi")
    @argument("--workers", type=int, metavar="N", help="override: number of workers")
    @argument("--ps", type=int, metavar="N", help="override: number of parameter servers")
    @argument("--backend", help=f"override: {backend_table.choices_text()}")
    @argument("--name", metavar="RUN", help="a name for the run (its id starts with it; magics accept it)")
    @wait_args
    @argument("--notebook", action="store_true", help="ship the notebook's code cells up to this one, then this cell")
    @argument("--push", metavar="a,b", help="ship these notebook values to the replicas (pickled)")
    @argument("--cold", action="store_true", help="start every replica afresh, not forked from a warm template")
    @output_arg("the Run")
    @cell_magic
    def px_distributed(self, line: str, cell: str) -> Any:
        """Run this cell's code as a distributed job; returns at once with a live monitor.

        Every replica runs the code with its environment set (TF_CONFIG, MASTER_ADDR/RANK/...,
        PX_* ; see the README). With --wait, a cell that ends with an expression shows the
        master's value as its result (`run.results()` has every replica's). The topology is
        -t NAME, -f FILE, or else the current one (the last %%px_topology);
        --framework/--workers/--ps/--backend override it.

        The code must define what it uses: values from earlier cells are not there unless
        shipped with --push (names read but not defined are reported before anything starts),
        or use --notebook to ship the notebook's earlier code cells too. IPython syntax
        (%magics, !commands) runs under an IPython shell in each replica.

        A topology with a sweep section (hptuning: or matrix:) starts a sweep instead: every
        trial runs the cell with the trial's values as globals, and the sweep monitor shows it
        (-o stores the Sweep; --wait waits for the whole sweep).

            %%px_distributed -t cluster --workers 4 --name mnist --wait -o run
            import torch.distributed as dist
            ...
        """
        args = parse_argstring(self.px_distributed, line)
        if args.topology and args.file:
            raise UsageError("give either -t NAME or -f FILE, not both")
        check_output(args)
        check_wait(args)
        topology = self._topology_for(args)
        source = self._code_for(args, cell)
        push = self._pushed_values(args.push)
        from ..code.checks import missing_names

        spec = read_sweep(topology)  # a sweep's values and the declarations are globals in every run
        known = {**push, **dict.fromkeys(spec.params if spec else ()), **dict.fromkeys(_resource(spec))}
        known.update(dict.fromkeys(topology.declarations or ()))
        missing = missing_names(source.text, shell_of(self).user_ns, shell_of(self).user_ns_hidden, known)
        if missing:
            raise UsageError(f"not submitted: {missing.message()}")
        started, run = self._start(topology, source, args, push)
        if started.is_sweep:  # the topology has a sweep section: `run` is the Sweep
            from .sweeps import show_started_sweep

            return show_started_sweep(self, run, topology, args)
        if args.output:
            shell_of(self).user_ns[args.output] = run
        line = (
            f"submitted run {run.run_id} ({run.record.backend}, {topology.total_replicas()} replicas); "
            f"see %px_status {run.run_id}"
        )
        monitor = show_run(shell_of(self), run, line)
        if args.wait:
            wait_for_run(run, monitor, args.timeout)
            if run.record.code.returns:  # the cell ends with an expression: the master's value is its result
                return run.results()[0]
        return None

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
                base = parse_polyaxonfile(text)
            except TopologyError as error:
                raise UsageError(f"-f {args.file}: " + topology_problems(error)) from None
        else:
            base = topologies.current
        given = {"--framework": args.framework, "--workers": args.workers, "--ps": args.ps, "--backend": args.backend}
        if base is not None and all(value is None for value in given.values()):
            return base
        options = {
            path: f"{option} {given[option]}" for path, option in OPTION_FIELDS.items() if given[option] is not None
        }
        try:
            return apply_overrides(
                base, framework=args.framework, workers=args.workers, ps=args.ps, backend=args.backend
            )
        except TopologyError as error:
            raise UsageError(topology_problems(error, options=options)) from None

    def _code_for(self, args: Any, cell: str) -> Any:
        """The cell's code as the kernel ships it (`code.kernel.cell_code`); a bad cell is one line."""
        from ..code.kernel import CellCodeError, cell_code

        shell = shell_of(self)
        try:
            return cell_code(shell, cell, with_notebook=args.notebook, cell_key=cell_id(shell))
        except CellCodeError as error:
            raise UsageError(str(error)) from None

    def _pushed_values(self, names_text: str | None) -> dict[str, Any]:
        if not names_text:
            return {}
        from ..code.checks import local_references

        values = {}
        for name in (part.strip() for part in names_text.split(",")):
            if not name:
                continue
            if not IDENTIFIER.match(name):
                raise UsageError(f"--push {name!r}: not a variable name")
            if name not in shell_of(self).user_ns:
                raise UsageError(f"--push {name}: no variable {name!r} in this notebook")
            value = shell_of(self).user_ns[name]
            local = local_references(value)
            if local:
                raise UsageError(
                    f"--push {name}: it refers to {', '.join(local)} defined in this notebook, which pickle "
                    "ships by name only and the replicas do not have; define it in the cell instead"
                )
            values[name] = value
        return values

    def _start(self, topology: Topology, source: Any, args: Any, push: dict[str, Any]) -> tuple[Any, Any]:
        """Start the cell's run, or its sweep (`jupyter_px.start` decides): what started, and its
        `Run` or `Sweep`."""
        from ..api import Run
        from ..service import RunService
        from ..start import start

        service = RunService()
        with submit_errors():
            started = start(cell_submission(source, topology, args.name, push, cold=args.cold), runs=service)
        if started.is_sweep:
            from ..sweeps.api import Sweep
            from ..sweeps.service import SweepService

            return started, Sweep(started.id, service=SweepService(runs=service))
        return started, Run(started.id, service=service)
