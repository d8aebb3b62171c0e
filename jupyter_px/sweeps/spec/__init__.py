"""What a sweep is, read from a polyaxonfile: `SweepSpec` and the readers of Polyaxon's sweep
sections (v0 `hptuning:`, v1 `matrix:`).

    topology = parse_polyaxonfile(text)     # the job and its sweep section, validated together
    spec = read_sweep(topology)             # the SweepSpec, or None for a topology of one run

Modules: `models` (what a validated sweep is), `params` (one parameter's kinds and forms),
`sections` (a section into a `SweepSpec`), with `fields` (the small readers), `v0` and `v1`
(each form's search), `hyperband`, `stopping` (early stopping) and `sizes` (trial counts);
`polyaxonfile` (a whole file: topology and sweep together).
"""

from .models import MAX_CONCURRENCY, MAX_TRIALS, Objective, Pruning, Resource, StopRule, SweepSpec
from .params import Param
from .polyaxonfile import parse_polyaxonfile, read_sweep, sweep_problems, try_parse_polyaxonfile
from .sections import SWEEP_KEYS, parse_sweep
from .sizes import hyperband_trials

__all__ = [
    "MAX_CONCURRENCY",
    "MAX_TRIALS",
    "SWEEP_KEYS",
    "Objective",
    "Param",
    "Pruning",
    "Resource",
    "StopRule",
    "SweepSpec",
    "hyperband_trials",
    "parse_polyaxonfile",
    "parse_sweep",
    "read_sweep",
    "sweep_problems",
    "try_parse_polyaxonfile",
]
