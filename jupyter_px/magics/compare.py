"""`%px_compare`: runs side by side (curves per metric, final and best values, the params that
differ), rendered by `jupyter_px.compare`, so the magic and `jupyter_px.compare(...)` show the same."""

from __future__ import annotations

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from .args import RUN_HELP, check_output, output_arg
from .common import shell_of


def _optimizations(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        metric, _, direction = item.rpartition(":")
        if not metric or direction not in ("min", "max"):
            raise UsageError(f"--optimize {item!r}: give METRIC:min or METRIC:max")
        out[metric] = direction
    return out


@magics_class
class CompareMagics(Magics):
    @magic_arguments()
    @argument("runs", nargs="*", help=f"runs to compare: each {RUN_HELP}")
    @argument("--pattern", metavar="GLOB", help="also every run whose name or id matches, e.g. 'lr-*'")
    @argument("--sweep", metavar="SWEEP", help="also the trials of this sweep")
    @argument("--metric", action="append", default=[], metavar="NAME", help="show this metric (repeat; default all)")
    @argument(
        "--optimize",
        "--optimise",  # the spelling it had first, still read
        dest="optimize",
        action="append",
        default=[],
        metavar="METRIC:min|max",
        help="which way is best for a metric (default: from its name: acc, f1, reward... max; else min)",
    )
    @argument("--points", type=int, default=500, metavar="N", help="points per curve at most (default 500)")
    @argument("--all-params", action="store_true", help="show params that are the same in every run too")
    @output_arg("the comparison (a jupyter_px.compare.notebook.RunComparison)")
    @line_magic
    def px_compare(self, line: str) -> None:
        """Compare runs: one plot per metric with a line per run (the best run's line thick), a
        sortable table of final and best values with the params that differ, and a button that
        opens TensorBoard over the same runs. Long series are downsampled (MinMaxLTTB) to
        --points points each. A saved notebook keeps a static copy of the plots and table.

            %px_compare lr-1 lr-2 lr-3
            %px_compare --pattern 'lr-*' --metric loss --optimize acc:max
        """
        args = parse_argstring(self.px_compare, line)
        check_output(args)
        if not args.runs and args.pattern is None and args.sweep is None:
            raise UsageError("name runs to compare, or --pattern GLOB, or --sweep SWEEP")
        from ..compare.notebook import compare

        try:
            result = compare(
                args.runs,
                pattern=args.pattern,
                sweep=args.sweep,
                metrics=args.metric or None,
                points=args.points,
                optimization=_optimizations(args.optimize),
                all_params=args.all_params,
            )
        except ValueError as error:  # a selection, a metric or a bound that cannot be used
            raise UsageError(str(error)) from None
        if args.output:
            shell_of(self).user_ns[args.output] = result
        display(result)
