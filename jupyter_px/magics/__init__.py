"""IPython magics: define a topology, submit notebook code as a distributed run, watch it.

    %load_ext jupyter_px
    %%px_topology cluster              <- polyaxonfile YAML (either form)
    %%px_distributed -t cluster --wait <- this cell's code runs in every replica
    %px_runs / %px_status RUN / %px_logs RUN / %px_stop RUN / %px_attach RUN
    %px_plot RUN [METRIC ...] / %px_tensorboard RUN [RUN ...] / %px_topology_form [NAME]
    %px_compare RUN [RUN ...] [--pattern GLOB] [--sweep SWEEP]
    %px_sweeps / %px_sweep_stop SWEEP / %px_attach SWEEP  <- a topology with hptuning:/matrix: sweeps

Every magic is named `px_*` (never `%px` / `%%px`, which belong to ipyparallel), takes its
arguments through `magic_arguments` (so `%px_logs?` shows the help; shared options come from
`args`), and reports bad input as a `UsageError`: IPython prints it as one line without a
traceback, and a notebook run by nbclient or "Run all" still stops at it.

The magics are thin: topologies are parsed by `jupyter_px.topology`, runs are submitted and read
through `jupyter_px.api`, code is found and checked by `jupyter_px.code`, and what is
shown is rendered by `jupyter_px.presentation` (the live monitor by `jupyter_px.widgets`).
"""

from __future__ import annotations

from typing import Any

from .compare import CompareMagics
from .runs import RunMagics
from .submit import SubmitMagics
from .sweeps import SweepMagics
from .topology import TopologyMagics

#: Every class of magics `%load_ext jupyter_px` registers (and `%unload_ext` removes).
MAGIC_CLASSES = (TopologyMagics, SubmitMagics, RunMagics, SweepMagics, CompareMagics)


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext jupyter_px`."""
    for magics in MAGIC_CLASSES:
        ipython.register_magics(magics)


def unload_ipython_extension(ipython: Any) -> None:
    """`%unload_ext jupyter_px`: remove every magic this extension registered.

    IPython has no public inverse of `register_magics`; its `MagicsManager` keeps the magics in
    `magics[kind][name]` and the instances in `registry[class name]`, which is what is undone.
    The monitors' background updates stop too (their runs go on)."""
    from ..widgets import live_updates

    live_updates.stop_all()
    manager = ipython.magics_manager
    for magics in MAGIC_CLASSES:
        manager.registry.pop(magics.__name__, None)
        for kind, names in magics.magics.items():
            for name in names:
                manager.magics[kind].pop(name, None)
