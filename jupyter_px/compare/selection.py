"""Which runs a comparison is about: run references, a name pattern, a sweep's trials.

References are what users type everywhere (`RunStore.resolve`: an id, a name, `last`). A pattern
is a shell-style glob (`lr-*`) matched against each run's name and id. A sweep's trials come
from `sweeps.SweepService.trial_runs` (in trial order), and its objective says which way is best
for its metric. Order: as given, then pattern matches newest first; duplicates dropped.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence

from ..runstore import RunNotFound
from ..service import RunService

__all__ = ["MAX_RUNS", "SelectionError", "select_runs", "sweep_objective", "sweep_trials"]

#: The most runs one comparison holds (a table and plots of more are not read by anyone).
MAX_RUNS = 1000


class SelectionError(ValueError):
    """A selection that names no run, or one that cannot be found; the message says which."""


def sweep_trials(runs: RunService, sweep: str) -> list[str]:
    """The run ids of a sweep's trials, in trial order."""
    from ..sweeps.service import SweepService

    try:
        return list(SweepService(runs=runs).trial_runs(sweep))
    except (LookupError, ValueError, OSError) as error:
        raise SelectionError(f"sweep: {sweep!r}: {error}") from None


def sweep_objective(runs: RunService, sweep: str | None, given: Mapping[str, str] | None) -> dict[str, str] | None:
    """Which way is best, as given, with the sweep's own objective added where it has one and the
    caller named none for that metric (a sweep that minimises a loss highlights its lowest)."""
    chosen = dict(given or {})
    if sweep is None:
        return chosen or None
    from ..sweeps.service import SweepService

    sweeps = SweepService(runs=runs)
    try:
        status = sweeps.view(sweep).status
    except (LookupError, ValueError, OSError):
        return chosen or None  # select_runs says what is wrong with the reference
    if status.objective and status.direction:
        chosen.setdefault(status.objective, "min" if status.direction == "minimize" else "max")
    return chosen or None


def select_runs(
    runs: RunService, refs: Sequence[str] = (), pattern: str | None = None, sweep: str | None = None
) -> list[str]:
    """Run ids for the references, the pattern and the sweep, in that order, each once."""
    chosen: list[str] = []
    for ref in refs:
        try:
            chosen.append(runs.resolve(ref))
        except RunNotFound as error:
            raise SelectionError(str(error)) from None
    if pattern is not None:
        if not pattern:
            raise SelectionError("pattern: '' matches nothing (give a glob such as 'lr-*')")
        matched = []
        for run_id in runs.run_ids():
            if fnmatch.fnmatchcase(run_id, pattern):
                matched.append(run_id)
                continue
            try:
                name = runs.record(run_id).name
            except (OSError, ValueError, RunNotFound):
                continue
            if name and fnmatch.fnmatchcase(name, pattern):
                matched.append(run_id)
        if not matched:
            raise SelectionError(f"pattern: {pattern!r} matches no run's name or id")
        chosen.extend(matched)
    if sweep is not None:
        chosen.extend(sweep_trials(runs, sweep))
    unique = list(dict.fromkeys(chosen))
    if not unique:
        raise SelectionError("no runs to compare: name runs, a pattern or a sweep")
    if len(unique) > MAX_RUNS:
        raise SelectionError(f"{len(unique)} runs selected; at most {MAX_RUNS} are compared at once")
    return unique
