"""What a notebook's cells ship: the rules for the cells' text, the same whether the cells come
from a notebook file (`NotebookCells`: the sidebar, `jupyter_px.submit("book.ipynb")`) or from the
running kernel (`%%px_distributed --notebook`, `kernel.py`).

* **Which cells.** Code cells only; a `%%px_distributed` cell stands for its body (the code it
  runs in every replica: a notebook written around the magics, like quickstart.ipynb, ships the
  code its `%%px_distributed` cells run); other px magic cells (`%%px_topology`: the topology,
  not code) are dropped, and px line magics (`%px_status ...`, `%load_ext jupyter_px`) blanked.
* **IPython syntax.** `%pip`, `!nvidia-smi` or `%%time` are not Python. IPython's own
  `TransformerManager` rewrites them into `get_ipython()...` calls; code that needs
  `get_ipython()` afterwards is shipped as `language="ipython"` and the replica runner executes
  it under an IPython shell (rather than refusing it: a `!pip install` line in a training cell is
  common and works the same in every replica).
* **Where each line came from.** The joined cells' spans (`source_map.span`), so a replica's
  traceback names "cell [5], line 8"; none where IPython's rewriting changed the number of lines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .source_map import span

#: A cell whose first line runs one of our cell magics (%%px_topology, %%px_distributed, ...).
_PX_CELL = re.compile(r"^\s*%%px_\w+")
#: A `%%px_distributed` cell: its first code line (the magic and its options), then its body.
_PX_DISTRIBUTED = re.compile(r"^\s*%%px_distributed\b")
#: Line magics that only make sense in the notebook: ours, and loading this extension.
_PX_LINE = re.compile(r"^\s*%(px_\w+|(re)?load_ext\s+jupyter_px\b)")


# ---------------------------------------------------------------------------------------------
# IPython syntax


@dataclass(frozen=True)
class Transformed:
    """Cells' text with IPython syntax rewritten, and how the runner must execute it."""

    source: str
    language: str  # "python", or "ipython" when the code calls get_ipython()


def transform(source: str) -> Transformed:
    """Rewrite IPython syntax to Python; the language says whether an IPython shell is needed."""
    from IPython.core.inputtransformer2 import TransformerManager

    python = TransformerManager().transform_cell(source)
    return Transformed(python, "ipython" if "get_ipython()" in python else "python")


# ---------------------------------------------------------------------------------------------
# One cell's text


def is_px_cell(source: str) -> bool:
    """Does the cell run one of our cell magics (a topology, not training code)?"""
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
    other cell."""
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


# ---------------------------------------------------------------------------------------------
# Cells joined


def notebook_source(previous_cells: Iterable[str], current_body: str) -> str:
    """Earlier code cells (minus px cells) + the current cell's body, joined as shipped."""
    parts = [strip_px_lines(source) for source in previous_cells if source.strip() and not is_px_cell(source)]
    parts.append(strip_px_lines(current_body))
    return "\n\n".join(part.rstrip() for part in parts if part.strip()) + "\n"


def source_spans(
    previous: Iterable[tuple[str, int, dict[str, Any]]], current: tuple[str, int, dict[str, Any]] | None, shipped: str
) -> list[dict[str, Any]]:
    """Where each line of `notebook_source(previous, current)` came from, as source-map spans
    (`source_map`): each item is (the text given to `notebook_source`, how many lines of its
    cell come before that text, the cell's id / execution count / position). None where the
    shipped code (IPython syntax rewritten) no longer has the same number of lines."""
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


# ---------------------------------------------------------------------------------------------
# A notebook document (.ipynb JSON)


def code_cells(document: dict[str, Any], tag: str | None) -> Iterator[tuple[int, dict[str, Any], str]]:
    """(position, cell, source text) of each code cell of a notebook: all, or those tagged."""
    for position, cell in enumerate(document.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        if tag is not None and tag not in (cell.get("metadata", {}).get("tags") or []):
            continue
        source = cell.get("source", "")
        yield position, cell, "".join(source) if isinstance(source, list) else str(source)


def _place(position: int, cell: dict[str, Any]) -> dict[str, Any]:
    return {"cell_id": cell.get("id"), "execution_count": cell.get("execution_count"), "cell_index": position}


def document_code(document: dict[str, Any], tag: str | None) -> tuple[str, str]:
    """(code, language) a notebook ships: its code cells (or those tagged `tag`) joined,
    `%%px_distributed` cells as their bodies, IPython syntax rewritten."""
    cells = []
    for _, _, text in code_cells(document, tag):
        body = distributed_body(text)
        cells.append(text if body is None else body)
    code = notebook_source(cells, "")
    if not code.strip():
        return "", "python"
    shipped = transform(code)
    return shipped.source, shipped.language


def document_spans(document: dict[str, Any], tag: str | None, shipped: str, name: str) -> list[dict[str, Any]]:
    """Where each line of a notebook's shipped code (`document_code`) came from: one span per
    cell (its id, execution count and position), or none where IPython's rewriting changed the
    number of lines (a cell magic becomes one call), so nothing points at a wrong line."""
    picked = []
    for position, cell, text in code_cells(document, tag):
        body = distributed_body_at(text)
        picked.append((body[0] if body else text, body[1] if body else 0, {**_place(position, cell), "notebook": name}))
    return source_spans(picked, None, shipped)


def cells_before(path: Path, current_cell: str) -> list[tuple[str, dict[str, Any]]] | None:
    """The code cells of the notebook file at `path` before the current one, each with its id,
    execution count and position; None if the current cell is not in the file.

    The current cell is recognised by its text, so a notebook with unsaved edits to it is not
    mistaken for the running one (the caller then falls back to the kernel's history)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    cells: list[tuple[str, dict[str, Any]]] = []
    wanted = current_cell.strip()
    for position, cell, source in code_cells(document, None):
        if source.strip() == wanted:
            return cells
        cells.append((source, {**_place(position, cell), "notebook": path.name}))
    return None
