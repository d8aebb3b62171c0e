"""What a surface was given as a run's code, said by its type rather than guessed from a string.

A submission names its code as one of four sources; `loading.load_code` turns it into the text
the run ships, once:

* `ScriptFile(path)`: a Python file, decoded as Python itself would (PEP 263); shipped under
  its own name.
* `SourceText(text, origin="cell")`: code text (a cell, a notebook's cells already joined);
  shipped as `main.py`, with where it came from recorded. `%%px_distributed` builds one from the
  kernel's cells (`kernel.cell_code`).
* `FunctionCall(fn, args, kwargs)`: a function (or lambda) every replica calls, shipped by
  value with the notebook globals it uses (`function_calls`); `run.results()` gives what each
  returned.
* `NotebookCells(path, cells="all"|"tagged", tag)`: a notebook's code cells (all, or those
  carrying `tag`), IPython syntax rewritten (`notebook`). The server, which reads notebooks
  through its contents manager (never outside its root), passes the notebook it read as
  `content`.

`code_source` is the one place a plain `str` or path becomes a source, for the public
`jupyter_px.submit(code_or_path)`: a path object, or one line ending in `.py`, is a script;
a path object ending in `.ipynb` is a notebook; any other text is code.

Plain data, standard library only: building a source reads nothing and checks only its own
fields.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

#: The cell tag that selects a notebook's training cells, unless another is named.
DEFAULT_TAG = "px"


@dataclass(frozen=True)
class ScriptFile:
    """A Python script. `text` is its content when the caller has read it already (the server
    reads through its contents manager); else the file at `path` is read."""

    path: str | os.PathLike
    text: str | None = None
    origin: str | None = None  # recorded as the run's source; default: the file's absolute path


@dataclass(frozen=True)
class SourceText:
    """Code text; `origin` says where it came from ("cell", "notebook:<path>", "code")."""

    text: str
    origin: str = "code"
    language: str = "python"  # or "ipython": code that needs an IPython shell (%magics, !commands)
    #: Where its lines came from (`source_map.span` entries for main.py), for tracebacks.
    cells: tuple[dict[str, Any], ...] = ()
    #: Its last expression (a notebook cell's) is each replica's result (`run.results()`).
    returns: bool = False


@dataclass(frozen=True)
class FunctionCall:
    """A function every replica calls with `args` and `kwargs` (`function_calls`).
    `sources`: the cells it was compiled from (`source_map` `code` entries), for tracebacks."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    sources: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    origin: str | None = None  # recorded as the run's source; default: function:<its name>


@dataclass(frozen=True)
class NotebookCells:
    """A notebook's code cells: all of them, or only those tagged `tag`."""

    path: str | os.PathLike
    cells: Literal["all", "tagged"] = "all"
    tag: str = DEFAULT_TAG
    content: dict[str, Any] | None = None  # the notebook, when the caller has read it already
    origin: str | None = None  # default: notebook:<path>

    def __post_init__(self) -> None:
        if self.cells not in ("all", "tagged"):
            raise ValueError(f"cells: {self.cells!r} is not 'all' or 'tagged'")
        if not isinstance(self.tag, str) or not self.tag.strip():
            raise ValueError(f"tag: {self.tag!r} is not a cell tag")


CodeSource = ScriptFile | SourceText | NotebookCells | FunctionCall


def code_source(code: str | os.PathLike | CodeSource) -> CodeSource:
    """The one decision of what a plain string or path means (see the module docstring)."""
    if isinstance(code, (ScriptFile, SourceText, NotebookCells, FunctionCall)):
        return code
    if isinstance(code, os.PathLike):
        return NotebookCells(code) if os.fspath(code).endswith(".ipynb") else ScriptFile(code)
    if not isinstance(code, str):
        raise TypeError(
            f"code must be Python source text, a path to a .py file or a code source, got {type(code).__name__}"
        )
    if "\n" not in code and code.endswith(".py"):
        return ScriptFile(code)
    return SourceText(code)
