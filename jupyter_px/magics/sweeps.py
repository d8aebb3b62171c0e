"""`%px_sweeps`, `%px_sweep_stop`, and what `%%px_distributed` and `%px_attach` do for a sweep.

A topology with a sweep section (`hptuning:` or `matrix:`) makes `%%px_distributed` start a
sweep instead of one run: each trial runs the cell with the trial's values as globals (and in
`tracking.get_params()`, `PX_PARAMS`); the sweep monitor shows it. `%px_attach SWEEP` shows it
again (after a kernel restart: sweeps go on without the kernel).
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
from .args import check_output, output_arg
from .common import in_kernel, shell_of


def open_sweep(ref: str) -> Any:
    from ..service import SweepNotFound
    from ..sweeps.api import Sweep

    try:
        return Sweep(ref)
    except SweepNotFound as error:
        raise UsageError(f"{error} (%px_sweeps lists them)") from None


def show_sweep(shell: Any, sweep: Any, terminal_line: str) -> Any:
    """The sweep monitor in a notebook (returned); `terminal_line` in a terminal (None)."""
    if in_kernel(shell):
        from ..widgets.sweep_monitor import SweepMonitor

        monitor = SweepMonitor(sweep)
        monitor.show()
        return monitor
    print(terminal_line)
    return None


def wait_for_sweep(sweep: Any, monitor: Any, timeout: float | None) -> None:
    try:
        status = sweep.wait(timeout=timeout)
    except KeyboardInterrupt:
        print(
            f"stopped waiting; sweep {sweep.sweep_id} goes on (%px_sweep_stop {sweep.sweep_id} stops it)",
            file=sys.stderr,
        )
        return
    except TimeoutError as error:
        raise UsageError(f"{error}; it goes on (%px_sweep_stop {sweep.sweep_id} stops it)") from None
    if monitor is not None:
        monitor.stop_updates()
        monitor.refresh()
    if status.state.value != "Succeeded":
        raise UsageError(f"sweep {sweep.sweep_id} {status.state.value}: {status.message}")
    if monitor is None:
        print(f"sweep {sweep.sweep_id} {status.state.value}: {status.message}")


def show_started_sweep(magics: Magics, sweep: Any, topology: Any, args: Any) -> None:
    """`%%px_distributed` on a topology with a sweep section started `sweep`: its monitor."""
    shell = shell_of(magics)
    if args.output:
        shell.user_ns[args.output] = sweep
    spec = sweep.spec
    replicas = topology.total_replicas()
    line = (
        f"started sweep {sweep.sweep_id}: {spec.n_trials} trials ({spec.algorithm}), {spec.concurrency} at a time, "
        f"each {replicas} replica{'s' if replicas != 1 else ''}; see %px_sweeps"
    )
    notes = "".join(f"\nnote: {note}" for note in spec.notes)  # what is not done as written
    monitor = show_sweep(shell, sweep, line + notes)
    if monitor is not None and notes:
        print(notes.strip())
    if args.wait:
        wait_for_sweep(sweep, monitor, args.timeout)


@magics_class
class SweepMagics(Magics):
    @magic_arguments()
    @output_arg("the sweeps' summaries (the JSON shape of `jupyter px sweep list --json`)")
    @line_magic
    def px_sweeps(self, line: str) -> None:
        """List sweeps, newest first: id, name, state, trials, the best trial."""
        args = parse_argstring(self.px_sweeps, line)
        check_output(args)
        from ..sweeps.service import SweepService
        from ..sweeps.view import SWEEPS_HEADERS, sweep_json, sweep_rows

        views = SweepService().list()
        if args.output:
            shell_of(self).user_ns[args.output] = [sweep_json(v, trials=False) for v in views]
        if not views:
            print("no sweeps yet")
            return
        rows = sweep_rows(views)
        display(as_html.TextAndHtml(as_text.table(SWEEPS_HEADERS, rows), as_html.table(SWEEPS_HEADERS, rows)))

    @magic_arguments()
    @argument("sweep", help="a sweep id, a sweep name (its newest sweep) or 'last'")
    @line_magic
    def px_sweep_stop(self, line: str) -> None:
        """Stop a sweep: its running trials (each whole run) are stopped, then its controller."""
        args = parse_argstring(self.px_sweep_stop, line)
        sweep = open_sweep(args.sweep)
        status = sweep.stop()
        print(f"sweep {sweep.sweep_id}: {status.state.value}")
