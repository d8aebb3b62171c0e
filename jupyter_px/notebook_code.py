"""Finding the code a notebook ships to its replicas, and checking it before it leaves.

`%%px_distributed` sends either the cell's own code or, with `--notebook`, the code cells of
the notebook up to the current one. Three things make that harder than "take the text":

* **Where the notebook is.** jupyter_server tells a kernel the notebook's path
  (`JPY_SESSION_NAME`, which ipykernel also puts in the user namespace as `__session__`), in
  JupyterLab and the classic Notebook alike. The file is what the user sees, in the order they
  see it, so it is preferred. It may be stale (unsaved edits) or absent (nbclient, a console,
  a plain IPython shell): then the kernel's input history is used, which is the order the
  cells actually ran in. Either way we stop at the current cell and drop cells that are
  themselves px magics (a topology cell is not training code).
* **IPython syntax.** `%pip`, `!nvidia-smi` or `%%time` are not Python. IPython's own
  `TransformerManager` rewrites them into `get_ipython()...` calls; code that needs
  `get_ipython()` afterwards is shipped as `language="ipython"` and the replica runner executes
  it under an IPython shell (rather than refusing it: a `!pip install` line in a training cell is
  common and works the same in every replica).
* **Exploratory state.** A cell that reads `lr` defined three cells up works in the notebook and
  fails with NameError in every replica. `missing_names` finds such names statically (symtable:
  every scope's global reads minus what the shipped code binds) so the magic can refuse before
  submitting and suggest `--push`.
"""

from __future__ import annotations

import builtins
import json
import os
import re
import symtable
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: A cell whose first line runs one of our cell magics (%%px_topology, %%px_distributed, ...).
_PX_CELL = re.compile(r"^\s*%%px_\w+")
#: A `%%px_distributed` cell: its first code line (the magic and its options), then its body.
_PX_DISTRIBUTED = re.compile(r"^\s*%%px_distributed\b")
#: Line magics that only make sense in the notebook: ours, and loading this extension.
_PX_LINE = re.compile(r"^\s*%(px_\w+|(re)?load_ext\s+jupyter_px\b)")


@dataclass(frozen=True)
class ShippedCode:
    """What is sent to the replicas: Python source and how the runner must execute it."""

    source: str
    language: str  # "python", or "ipython" when the code calls get_ipython()
    origin: str  # "cell", or "notebook:<path>", or "notebook:history"


# ---------------------------------------------------------------------------------------------
# IPython syntax


def transform(source: str) -> ShippedCode:
    """Rewrite IPython syntax to Python; the language says whether an IPython shell is needed."""
    from IPython.core.inputtransformer2 import TransformerManager

    python = TransformerManager().transform_cell(source)
    language = "ipython" if "get_ipython()" in python else "python"
    return ShippedCode(python, language, "cell")


# ---------------------------------------------------------------------------------------------
# Cells of the notebook


def is_px_cell(source: str) -> bool:
    return bool(_PX_CELL.match(_first_code_line(source)))


def distributed_body_at(source: str) -> tuple[str, int] | None:
    """`distributed_body` and how many of the cell's lines come before it (the magic line)."""
    lines = source.splitlines()
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        if not _PX_DISTRIBUTED.match(line):
            return None
        return "\n".join(lines[number + 1 :]), number + 1
    return None


def distributed_body(source: str) -> str | None:
    """The code a `%%px_distributed` cell ships (its body, below the magic line); None for any
    other cell.

    A notebook submitted as a whole (the sidebar's "Run distributed") ships these bodies: they
    are the notebook's training code, written where the user runs it from the notebook itself.
    """
    found = distributed_body_at(source)
    return None if found is None else found[0]


def _first_code_line(source: str) -> str:
    for line in source.splitlines():
        if line.strip():
            return line
    return ""


def strip_px_lines(source: str) -> str:
    """Blank out `%px_...` and `%load_ext jupyter_px` lines (they only make sense in the
    notebook); blank, not dropped, so every other line keeps its number (tracebacks name it)."""
    return "\n".join("" if _PX_LINE.match(line) else line for line in source.splitlines())


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


def cells_from_file(path: Path, current_cell: str) -> list[str] | None:
    """Code cells of the notebook file before the current one; None if it is not in the file.

    The current cell is recognised by its text, so a notebook with unsaved edits to it is not
    mistaken for the running one (the caller then falls back to the history).
    """
    placed = cells_with_places(path, current_cell)
    return None if placed is None else [source for source, _ in placed]


def cells_with_places(path: Path, current_cell: str) -> list[tuple[str, dict[str, Any]]] | None:
    """`cells_from_file`, each cell with its id, execution count and position in the notebook."""
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    cells: list[tuple[str, dict[str, Any]]] = []
    wanted = current_cell.strip()
    for position, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        if source.strip() == wanted:
            return cells
        place = {"cell_id": cell.get("id"), "execution_count": cell.get("execution_count"), "cell_index": position}
        cells.append((source, {**place, "notebook": path.name}))
    return None


def cells_from_history(raw_history: list[str]) -> list[str]:
    """The cells this kernel ran before the current one (the last entry of the raw history)."""
    return [source for source in raw_history[1:-1] if source is not None]


def source_spans(
    previous: Iterable[tuple[str, int, dict[str, Any]]], current: tuple[str, int, dict[str, Any]] | None, shipped: str
) -> list[dict[str, Any]]:
    """Where each line of `notebook_source(previous, current)` came from, as source-map spans
    (`cell_sources`): each item is (the text given to `notebook_source`, how many lines of its
    cell come before that text, the cell's id / execution count / position). None where the
    shipped code (IPython syntax rewritten) no longer has the same number of lines."""
    from .cell_sources import span

    parts = [
        (strip_px_lines(text), offset, meta) for text, offset, meta in previous if text.strip() and not is_px_cell(text)
    ]
    if current is not None:
        parts.append((strip_px_lines(current[0]), current[1], current[2]))
    spans, line = [], 1
    for text, offset, meta in parts:
        body = text.rstrip()
        if not body.strip():
            continue
        count = len(body.splitlines())
        spans.append(span(line, count, offset, **meta))
        line += count + 1
    return spans if spans and len(shipped.rstrip("\n").splitlines()) == line - 2 else []


def notebook_source(previous_cells: Iterable[str], current_body: str) -> str:
    """The code to ship for `--notebook`: earlier code cells (minus px cells) + this cell's body."""
    parts = [strip_px_lines(source) for source in previous_cells if source.strip() and not is_px_cell(source)]
    parts.append(strip_px_lines(current_body))
    return "\n\n".join(part.rstrip() for part in parts if part.strip()) + "\n"


# ---------------------------------------------------------------------------------------------
# Names the code reads but does not define


def ends_with_expression(python: str) -> bool:
    """Does the code's last statement compute a value (a notebook cell's result)?"""
    import ast

    try:
        body = ast.parse(python).body
    except SyntaxError:
        return False
    return bool(body) and isinstance(body[-1], ast.Expr)


def free_names(python: str) -> set[str]:
    """Global names `python` reads (in any scope) that it never binds at module level.

    Order is ignored (a name read before it is assigned counts as defined): this is a check
    for names that come from elsewhere, not a linter.
    """
    top = symtable.symtable(python, "<cell>", "exec")
    read: set[str] = set()
    bound: set[str] = set()
    stack = [top]
    while stack:
        table = stack.pop()
        for symbol in table.get_symbols():
            name = symbol.get_name()
            if table is top:
                if symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace():
                    bound.add(name)
                if symbol.is_referenced():
                    read.add(name)
            elif symbol.is_global():
                if symbol.is_declared_global() and symbol.is_assigned():
                    bound.add(name)
                if symbol.is_referenced():
                    read.add(name)
        stack.extend(table.get_children())
    return read - bound


@dataclass(frozen=True)
class MissingNames:
    """Names the shipped code needs from the notebook: plain values, and modules to import."""

    values: list[str]
    modules: dict[str, str]  # name -> module it is bound to in the notebook

    def __bool__(self) -> bool:
        return bool(self.values or self.modules)

    def message(self) -> str:
        parts = []
        if self.values:
            names = ", ".join(self.values)
            parts.append(
                f"the code reads {names}, defined in this notebook but not in the code that is shipped; "
                f"every replica would fail with NameError. Ship the values with --push {','.join(self.values)}"
                " (or define them in the cell, or submit with --notebook)"
            )
        if self.modules:
            imports = "; ".join(
                f"import {module}" if module == name else f"import {module} as {name}"
                for name, module in sorted(self.modules.items())
            )
            parts.append(f"the code uses modules imported elsewhere in this notebook: add `{imports}` to the cell")
        return "; ".join(parts)


def missing_names(
    python: str, user_ns: Mapping[str, Any], hidden: Iterable[str] = (), pushed: Iterable[str] = ()
) -> MissingNames:
    """Names `python` reads, does not define, that are not builtins, but the notebook has."""
    needed = free_names(python) - set(dir(builtins)) - set(hidden) - set(pushed) - {"get_ipython"}
    values, modules = [], {}
    for name in sorted(needed):
        if name not in user_ns or name.startswith("__"):
            continue
        value = user_ns[name]
        if isinstance(value, types.ModuleType):
            modules[name] = value.__name__
        else:
            values.append(name)
    return MissingNames(values, modules)


# ---------------------------------------------------------------------------------------------
# --push


def local_references(value: Any) -> list[str]:
    """Functions/classes defined in the notebook (`__main__`) that pickling `value` refers to.

    pickle stores them by name only; the replicas' `__main__` does not have them, so they would
    fail to load there. Found by pickling once with a hook that sees every object.
    """
    import io
    import pickle

    found: list[str] = []

    class _Finder(pickle.Pickler):
        def persistent_id(self, obj: Any) -> None:
            if isinstance(obj, (type, types.FunctionType)) and getattr(obj, "__module__", None) == "__main__":
                qualname = getattr(obj, "__qualname__", repr(obj))
                if qualname not in found:
                    found.append(qualname)
            return None

    try:
        _Finder(io.BytesIO(), protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    except Exception:  # other unpicklable values are reported by the API with pickle's error
        pass
    return found


# ---------------------------------------------------------------------------------------------
# Functions shipped by value


def function_cells(fn: Any) -> dict[str, dict[str, Any]]:
    """The cells of this kernel that `fn` (and the functions it uses) was compiled from, as
    source-map `code` entries (`cell_sources`): the cell's lines and its execution count, so a
    replica's traceback names "cell [5], line 8". Empty outside IPython."""
    import linecache

    from .cell_sources import cell_label
    from .function_calls import cells_of

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
