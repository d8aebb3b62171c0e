"""How many trials a sweep runs, checked before anything runs.

A grid's size is the product of its parameters' value counts; asking for more trials than a
grid has combinations is refused, fewer is said in `notes` (Polyaxon runs the first N). A
sampled space whose parameters are all discrete has as many distinct points as its grid: more
trials than that is refused (polyaxon/polyaxon#193: such a group sampled forever). Hyperband's
count follows from `max_iter` and `eta`. No sweep runs more than `MAX_TRIALS`.
"""

from __future__ import annotations

import math

from ...topology.errors import Problem
from .fields import Fields
from .models import MAX_TRIALS
from .params import Param


def limit(fields: Fields, n: int, path: str) -> int | None:
    """`n`, or None (and a problem) above `MAX_TRIALS`."""
    if n > MAX_TRIALS:
        fields.problems.append(Problem(path, f"this sweep would run {n:,} trials; at most {MAX_TRIALS:,}"))
        return None
    return n


def count_trials(
    fields: Fields, algorithm: str, params: dict[str, Param], requested: int | None, path: str, matrix_path: str
) -> int | None:
    """The trials a grid or a sampled search runs: `requested` (`n_experiments` / `numRuns`) when
    the space has that many points, the whole grid when a grid asks for none."""
    problems = fields.problems
    if not params:
        return None
    if algorithm == "grid":
        sampled = [name for name, p in params.items() if not p.discrete]
        if sampled:
            name = sampled[0]
            problems.append(
                Problem(
                    f"{matrix_path}.{name}",
                    f"grid search walks discrete values; {name} is {params[name].kind} (use values, range, "
                    "linspace, logspace or geomspace, or random search)",
                )
            )
            return None
        size = grid_size(params) or 0
        if requested is None:
            if size > MAX_TRIALS:
                problems.append(
                    Problem(
                        matrix_path,
                        f"the grid has {size:,} combinations ({factors(params)}); at most {MAX_TRIALS:,}: "
                        "ask for fewer with n_experiments / numRuns, or use random search",
                    )
                )
                return None
            return size
        if requested > size:
            problems.append(
                Problem(
                    path,
                    f"{requested} is more than the grid's {size} combinations ({factors(params)}): "
                    f"ask for at most {size}",
                )
            )
            return None
        if requested < size:
            fields.notes.append(f"the grid has {size:,} combinations ({factors(params)}); {requested} of them are run")
        return requested
    if requested is None:
        return None
    if all(p.discrete or p.kind == "pvalues" for p in params.values()):
        size = grid_size(params, with_pvalues=True) or 0
        if requested > size:
            problems.append(
                Problem(
                    path,
                    f"{requested} trials asked of a space with {size} distinct combinations ({factors(params)}): "
                    f"ask for at most {size}, or use grid search",
                )
            )
            return None
    return requested


def grid_size(params: dict[str, Param], with_pvalues: bool = False) -> int | None:
    size = 1
    for param in params.values():
        if param.values is None or (param.kind == "pvalues" and not with_pvalues):
            return None
        size *= len(param.values)
    return size


def factors(params: dict[str, Param]) -> str:
    return " x ".join(f"{name} {len(p.values or [])}" for name, p in params.items())


def hyperband_trials(max_iter: int, eta: int) -> int:
    """Configurations Hyperband tries for `max_iter` and `eta` (Li et al. 2018, as Polyaxon's
    hyperband counts them): s_max = floor(log_eta(max_iter)), B = (s_max + 1) * max_iter, and
    bracket s tries ceil(B / max_iter * eta**s / (s + 1)) configurations."""
    s_max = int(math.floor(math.log(max_iter) / math.log(eta) + 1e-9))
    budget = (s_max + 1) * max_iter
    return sum(math.ceil(budget / max_iter * eta**s / (s + 1)) for s in range(s_max + 1))
