"""The code a running kernel ships: a `%%px_distributed` cell (with `--notebook`, the notebook's
code cells up to it), and the cells a function sent by `jupyter_px.submit(fn)` was compiled from.

**Where the notebook is.** jupyter_server tells a kernel the notebook's path
(`JPY_SESSION_NAME`, which ipykernel also puts in the user namespace as `__session__`), in
JupyterLab and the classic Notebook alike. The file is what the user sees, in the order they see
it, so it is preferred. It may be stale (unsaved edits) or absent (nbclient, a console, a plain
IPython shell): then the kernel's input history is used, which is the order the cells actually
ran in. Either way the cells stop at the current one, and follow the rules of `notebook.py`.

`cell_code` gives the magic a `SourceText` ready to submit: the text rewritten, its spans for
tracebacks, whether its last expression is each replica's result; `checks.missing_names` then
looks at that text before anything leaves.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from . import notebook
from .checks import ends_with_expression
from .function_calls import cells_of
from .source_map import cell_label
from .sources import SourceText


class CellCodeError(ValueError):
    """A cell that cannot be shipped (empty, or not Python once IPython syntax is rewritten)."""


def notebook_path(user_ns: Mapping[str, Any] | None = None, cwd: str | None = None) -> Path | None:
    """The notebook this kernel belongs to, as told by jupyter_server; None when not known.

    `JPY_SESSION_NAME` is either an absolute path or the server's API path (relative to the
    server root, which the kernel does not know); the kernel's working directory is the
    notebook's directory, so the base name is tried there too.
    """
    names = []
    if user_ns is not None and isinstance(user_ns.get("__session__"), str):
        names.append(user_ns["__session__"])
    if os.environ.get("JPY_SESSION_NAME"):
        names.append(os.environ["JPY_SESSION_NAME"])
    cwd = cwd or os.getcwd()
    for name in names:
        if not name.endswith(".ipynb"):
            continue
        for candidate in (Path(name), Path(cwd) / name, Path(cwd) / Path(name).name):
            if candidate.is_file():
                return candidate.resolve()
    return None


def cells_from_history(raw_history: list[str]) -> list[str]:
    """The cells this kernel ran before the current one (the last entry of the raw history)."""
    return [source for source in raw_history[1:-1] if source is not None]


def _say(text: str) -> None:
    print(text, file=sys.stderr)


def cell_code(
    shell: Any, cell: str, *, with_notebook: bool, cell_key: str | None, say: Callable[[str], None] = _say
) -> SourceText:
    """The code `%%px_distributed` ships for `cell` (the magic's body) in `shell`: the cell
    alone, or with `with_notebook` the notebook's code cells before it too (from the saved file,
    else from this kernel's history: `say` tells why). `cell_key`: the cell's id, so the
    previous run of this cell is found for comparison. CellCodeError when the cell is empty or
    does not compile."""
    origin = f"cell:{cell_key}" if cell_key else "cell"
    history = shell.history_manager
    raw = list(history.input_hist_raw) if history is not None else []
    number = len(raw) - 1 if raw else shell.execution_count  # this cell's [n]: its place in the history
    here = {"execution_count": number, "cell_id": cell_key}
    source = notebook.strip_px_lines(cell)
    previous_places: list[tuple[str, int, dict[str, Any]]] = []
    if with_notebook:
        current = raw[-1] if raw else ""
        path = notebook_path(shell.user_ns)
        placed = notebook.cells_before(path, current) if path is not None else None
        if placed is not None:
            origin = f"notebook:{path}"
            previous = [text for text, _ in placed]
            previous_places = [(text, 0, place) for text, place in placed]
        else:
            if path is not None:
                say(
                    f"{path.name}: this cell is not in the saved file (unsaved changes?); "
                    "shipping the cells this kernel ran instead"
                )
            previous = cells_from_history(raw)
            previous_places = [(raw[n], 0, {"execution_count": n}) for n in range(1, len(raw) - 1) if raw[n]]
            origin = "notebook:history"
        source = notebook.notebook_source(previous, cell)
    if not source.strip():
        raise CellCodeError("the cell is empty: write the training code below the %%px_distributed line")
    shipped = notebook.transform(source)
    try:
        compile(shipped.source, "<px_distributed>", "exec")
    except SyntaxError as error:
        raise CellCodeError(
            f"the code does not compile: line {error.lineno}: {error.msg}"
            + (f": {error.text.strip()}" if error.text else "")
        ) from None
    # the magic's line is the cell's first: the shipped body starts at the cell's line 2
    spans = notebook.source_spans(previous_places, (cell, 1, here), shipped.source)
    return SourceText(
        shipped.source,
        origin=origin,
        language=shipped.language,
        cells=tuple(spans),
        returns=shipped.language == "python" and ends_with_expression(shipped.source),
    )


def function_cells(fn: Any) -> dict[str, dict[str, Any]]:
    """The cells of this kernel that `fn` (and the functions it uses) was compiled from, as
    source-map `code` entries (`source_map`): the cell's lines and its execution count, so a
    replica's traceback names "cell [5], line 8". Empty outside IPython."""
    import linecache

    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:
        shell = None
    numbers = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}

    def cell_of(filename: str) -> dict[str, Any] | None:
        number = numbers.get(filename)
        lines = linecache.getlines(filename)
        if number is None or not lines:
            return None
        return {"lines": list(lines), "execution_count": number, "label": cell_label(number)}

    return cells_of(fn, cell_of) if numbers else {}
