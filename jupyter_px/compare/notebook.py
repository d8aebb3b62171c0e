"""`jupyter_px.compare(...)` and `%px_compare`: a comparison shown in a notebook.

`compare()` returns a `RunComparison`. Shown as a cell's result in JupyterLab, the extension's
comparison panel owns the view (every output carries `COMPARE_MIMETYPE`, naming the runs: the
panel reads the comparison from the server, as the sidebar's does: one plot per metric with a
picker, hover, smoothing, x as step or time, the table, the params' view, TensorBoard). Other
front-ends show what this module writes in the same outputs: the curves (plotly), the sortable
table with the `%px_tensorboard` line for the same runs, a parallel-coordinates plot of the
numeric params that differ (when there are such params). It is also data: `.comparison` (plain
data, `compare.comparison.Comparison`), `.dataframe()` (pandas), `.figure()` (plotly), `.tensorboard()`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..service.digests.downsample import DEFAULT_POINTS
from .comparison import Comparison, compare_runs
from .render import figure, figure_bundle, parallel_bundle, table_bundle
from .selection import select_runs, sweep_objective

__all__ = ["COMPARE_MIMETYPE", "RunComparison", "compare"]

#: The comparison's mimetype (the labextension's `compareOutput.ts` renders it): the runs, and
#: which part of the comparison an output is (the "main" one shows the whole panel, the others
#: nothing, since the panel has them all).
COMPARE_MIMETYPE = "application/vnd.jupyter-px.compare+json"


class RunComparison:
    """A comparison of runs as a notebook shows it (see the module's docstring)."""

    def __init__(self, comparison: Comparison, service: Any):
        self.comparison = comparison
        self.service = service

    @property
    def run_ids(self) -> list[str]:
        return self.comparison.run_ids

    def __repr__(self) -> str:
        return f"<RunComparison of {len(self.run_ids)} runs: {', '.join(m.name for m in self.comparison.metrics)}>"

    def figure(self) -> Any:
        return figure(self.comparison)

    def dataframe(self) -> Any:
        """One row per run: final_<metric>, best_<metric>, best_step_<metric>, and the params shown."""
        import pandas as pd

        records = []
        for row in self.comparison.rows():
            record: dict[str, Any] = {"run_id": row["run_id"], "name": row["name"], "state": row["state"]}
            for metric in self.comparison.metrics:
                record[f"final_{metric.name}"] = row["final"].get(metric.name)
                record[f"best_{metric.name}"] = row["best"].get(metric.name)
                record[f"best_step_{metric.name}"] = row["best_step"].get(metric.name)
            record.update(row["params"])
            records.append(record)
        return pd.DataFrame.from_records(records).set_index("run_id")

    def tensorboard(self) -> Any:
        """Start (or reuse) one TensorBoard over these runs; the typed start result."""
        return self.service.tensorboard(self.run_ids)

    def _payload(self, part: str) -> dict[str, Any]:
        comparison = self.comparison
        return {
            "version": 1,
            "runs": comparison.run_ids,
            "part": part,
            "metrics": [m.name for m in comparison.metrics],
            "optimization": {m.name: m.optimization for m in comparison.metrics},
            "all_params": comparison.all_params,
        }

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display({**figure_bundle(self.comparison), COMPARE_MIMETYPE: self._payload("main")}, raw=True)
        display({**table_bundle(self.comparison), COMPARE_MIMETYPE: self._payload("table")}, raw=True)
        parallel = parallel_bundle(self.comparison)  # a sweep's params against its objective
        if parallel is not None:
            display({**parallel, COMPARE_MIMETYPE: self._payload("params")}, raw=True)


def compare(
    *runs: str | Sequence[str],
    pattern: str | None = None,
    sweep: str | None = None,
    metrics: Sequence[str] | None = None,
    points: int = DEFAULT_POINTS,
    optimization: Mapping[str, str] | None = None,
    all_params: bool = False,
    optimisation: Mapping[str, str] | None = None,
) -> RunComparison:
    """Compare runs: `compare("a", "b")`, `compare(pattern="lr-*")`, `compare(sweep="s1")`.

    Runs are ids, names or `last` (a list works too); `metrics` limits the metrics shown;
    `points` bounds each curve (downsampled with MinMaxLTTB); `optimization` says which way is
    best where the name's guess is wrong (`{"val_acc": "max"}`); `all_params` shows the params that
    are the same in every run too. Shown as a cell's result: curves, table, TensorBoard button.
    `optimisation=`, the spelling it had first, is still read.
    """
    from ..service import RunService

    if optimisation is not None:
        if optimization is not None:
            raise ValueError("give optimization= (optimisation= is its older spelling), not both")
        optimization = optimisation
    refs: list[str] = []
    for item in runs:
        refs.extend([item] if isinstance(item, str) else list(item))
    service = RunService()
    run_ids = select_runs(service, refs, pattern=pattern, sweep=sweep)
    comparison = compare_runs(
        service,
        run_ids,
        metrics=metrics,
        points=points,
        optimization=sweep_objective(service, sweep, optimization),
        all_params=all_params,
    )
    return RunComparison(comparison, service)
