"""Which params matter for a metric: importance and correlation, one calculation for the
comparison of runs (`compare`) and a sweep's importance view (`sweeps.view_model`), so the two
never disagree about the same runs.

What W&B's parameter-importance panel shows (an importance and a correlation per param), from the
runs at hand and no model to train: for each param whose value differs between runs,

* **importance**: the share of the metric's variance the param's values account for, the
  correlation ratio eta^2 (between-group over total variance). Numbers with more than
  `MAX_GROUPS` distinct values are grouped by quantile first, so a continuous learning rate
  and a grid's three values are read the same way;
* **correlation**: Spearman's rank correlation of the metric with the param where the param is a
  number (None for text): its sign says which way to move it.

Runs without a value of the metric are left out; fewer than `MIN_RUNS` runs say nothing. These
are descriptive statistics of a handful of runs, not a fitted model (Optuna's fANOVA needs
scikit-learn and many trials): the panel says how many runs they come from. Each param's
importance is read on its own, so they need not add up to 1: every view labels them as what they
are, the share of the metric's variance the param alone explains (eta squared).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where a calculation runs: listing runs (the CLI's `runs`) needs no numpy
    import numpy as np

__all__ = ["EVALUATOR", "MIN_RUNS", "importance_label", "ParamImportance", "param_importance"]

#: What the numbers are, as every view names them.
EVALUATOR = "eta-squared"


def importance_label(metric: str) -> str:
    """The axis title of importance bars, wherever they are drawn."""
    return f"share of {metric}'s variance each param alone explains (η²)"


#: Runs with a value needed before anything is said.
MIN_RUNS = 3
#: Distinct numeric values above which they are grouped by quantile.
MAX_GROUPS = 5


@dataclass(frozen=True)
class ParamImportance:
    param: str
    importance: float
    correlation: float | None
    runs: int


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _ranks(values: np.ndarray) -> np.ndarray:
    import numpy as np

    order = values.argsort(kind="mergesort")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(len(values))
    for value in np.unique(values):  # ties share their mean rank
        same = values == value
        ranks[same] = ranks[same].mean()
    return ranks


def _eta_squared(groups: np.ndarray, y: np.ndarray) -> float:
    total = float(((y - y.mean()) ** 2).sum())
    if total == 0:
        return 0.0
    between = sum(float(same.sum()) * (float(y[same].mean()) - float(y.mean())) ** 2 for same in _masks(groups))
    return between / total


def _masks(groups: np.ndarray) -> list[np.ndarray]:
    import numpy as np

    return [groups == group for group in np.unique(groups)]


def param_importance(
    params: Sequence[Mapping[str, Any]], metric: Sequence[float | None], names: Sequence[str]
) -> list[ParamImportance]:
    """Importance and correlation of each of `names` (params of each run) for `metric` (one value
    a run, None where it has none), most important first."""
    import numpy as np

    keep = [i for i, value in enumerate(metric) if value is not None and np.isfinite(value)]
    if len(keep) < MIN_RUNS:
        return []
    y = np.array([metric[i] for i in keep], dtype=float)
    out = []
    for name in names:
        values = [params[i].get(name) for i in keep]
        if len({repr(v) for v in values}) < 2:
            continue
        correlation = None
        if _numeric(values):
            x = np.array(values, dtype=float)
            if len(np.unique(x)) > MAX_GROUPS:
                edges = np.quantile(x, np.linspace(0, 1, MAX_GROUPS + 1)[1:-1])
                groups = np.searchsorted(edges, x, side="right")
            else:
                groups = x
            rx, ry = _ranks(x), _ranks(y)
            if rx.std() > 0 and ry.std() > 0:
                correlation = float(np.corrcoef(rx, ry)[0, 1])
        else:
            labels = sorted({repr(v) for v in values})
            groups = np.array([labels.index(repr(v)) for v in values])
        out.append(ParamImportance(name, _eta_squared(np.asarray(groups), y), correlation, len(keep)))
    return sorted(out, key=lambda item: -item.importance)
