"""Run comparison that scales: select runs, overlay their curves, tabulate final and best values
and the params that differ.

    jupyter_px.compare("lr-1", "lr-2")          # in a notebook: curves, table, TensorBoard button
    jupyter_px.compare(pattern="lr-*", optimization={"acc": "max"})
    %px_compare lr-1 lr-2 --metric loss

Parts, one job each: `selection` (which runs), `comparison` (the data every surface renders),
`changes` (what changed since the previous run of a cell), `render` and `notebook` (the
notebook's view). Each run is read through the run service's digests (`service.digests`: read
once and kept while its files do not change, downsampled, its final and best values, its
params). The REST route is `jupyter_px.server.compare_handlers`.

This package is also the function: `jupyter_px.compare` is this module, and calling it calls
`notebook.compare` (the module's class is made callable below), so `jupyter_px.compare(...)` and
`import jupyter_px.compare` both work.
"""

from __future__ import annotations

import sys
import types
from typing import Any

__all__ = ["compare"]


def compare(*args: Any, **kwargs: Any) -> Any:
    """See `jupyter_px.compare.notebook.compare`."""
    from .notebook import compare as run_compare

    return run_compare(*args, **kwargs)


compare.__doc__ = (
    "Compare runs: compare('a', 'b'), compare(pattern='lr-*'), compare(sweep='s1'); "
    "options metrics=, points=, optimization={'acc': 'max'}, all_params=. See jupyter_px.compare.notebook.compare."
)


class _CallableModule(types.ModuleType):
    """`jupyter_px.compare(...)`: the package called is `compare(...)`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return compare(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
