"""Where a run's code comes from, said by its type rather than guessed from a string.

A submission names its code as one of three sources, and `load_code` turns it into the text
the run ships:

* `ScriptFile(path)`: a Python file, decoded as Python itself would (PEP 263); shipped under
  its own name.
* `SourceText(text, origin="cell")`: code text (a cell, a notebook's cells already joined);
  shipped as `main.py`, with where it came from recorded.
* `FunctionCall(fn, args, kwargs)`: a function (or lambda) every replica calls, shipped by
  value with the notebook globals it uses (`jupyter_px.function_calls`); `run.results()` gives
  what each returned.
* `NotebookCells(path, cells="all"|"tagged", tag)`: a notebook's code cells (all, or those
  carrying `tag`), IPython syntax rewritten. A `%%px_distributed` cell contributes its body
  (the code it runs in every replica); other px magic cells (`%%px_topology`: the topology,
  not code) and px line magics (`%px_status ...`) are dropped. The server, which reads notebooks through its
  contents manager (never outside its root), passes the notebook it read as `content`.

`code_source` is the one place a plain `str` or path becomes a source, for the public
`jupyter_px.submit(code_or_path)`: a path object, or one line ending in `.py`, is a script;
a path object ending in `.ipynb` is a notebook; any other text is code.

Each shipped file of code that came from a notebook goes with its source map
(`code/sources.json`, `jupyter_px.cell_sources`), so a replica's traceback names the cell.
"""

from __future__ import annotations

import io
import json
import os
import re
import tokenize
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .. import cell_sources, function_calls
from ..runstore import CodeSpec

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
    #: Where its lines came from (`cell_sources.span` entries for main.py), for tracebacks.
    cells: tuple[dict[str, Any], ...] = ()
    #: Its last expression (a notebook cell's) is each replica's result (`run.results()`).
    returns: bool = False


@dataclass(frozen=True)
class FunctionCall:
    """A function every replica calls with `args` and `kwargs` (`jupyter_px.function_calls`).
    `sources`: the cells it was compiled from (`cell_sources` `code` entries), for tracebacks."""

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


@dataclass(frozen=True)
class LoadedCode:
    """The code a run ships: its text, the file name it runs as, how it runs, where it came from."""

    text: str
    entrypoint: str
    language: str
    origin: str
    #: Other files of the code directory (a function's pickled call, the source map).
    files: Mapping[str, bytes | str] = field(default_factory=dict)
    returns: bool = False

    def spec(self, args: Sequence[str], push: Mapping[str, Any] | None) -> CodeSpec:
        """How a run (or every trial of a sweep) records this code: with its arguments and the
        names of the values pushed with it."""
        return CodeSpec(
            entrypoint=self.entrypoint,
            language=self.language,
            args=list(args),
            source=self.origin,
            pushed=sorted(push or {}),
            returns=self.returns,
        )


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


def load_code(source: CodeSource, language: str | None = None) -> LoadedCode:
    """The text a source ships; `language` ("python" / "ipython") overrides the source's."""
    if isinstance(source, ScriptFile):
        if source.text is not None:
            text, name = source.text, Path(source.path).name
            origin = source.origin or f"script:{source.path}"
            text = text if text.endswith("\n") else text + "\n"
        else:
            text, name, origin = read_script(Path(source.path))
            origin = source.origin or origin
        return LoadedCode(text, name, language or "python", origin)
    if isinstance(source, SourceText):
        if not isinstance(source.text, str):
            raise TypeError(f"code text must be a str, got {type(source.text).__name__}")
        files = {cell_sources.SOURCES_FILE: cell_sources.source_map({"main.py": list(source.cells)})}
        returns = source.returns and (language or source.language) == "python"
        return LoadedCode(
            source.text, "main.py", language or source.language, source.origin, files if source.cells else {}, returns
        )
    if isinstance(source, FunctionCall):
        name = function_calls.describe(source.fn)
        stub = f"# jupyter_px.submit({name}): every replica calls it; the call is {function_calls.FUNCTION_FILE}\n"
        shipped: dict[str, bytes | str] = {**function_calls.pack(source.fn, source.args, source.kwargs)}
        if source.sources:
            shipped[cell_sources.SOURCES_FILE] = cell_sources.source_map(code=source.sources)
        return LoadedCode(stub, "main.py", "function", source.origin or f"function:{name}", shipped, returns=True)
    if isinstance(source, NotebookCells):
        notebook = source.content if source.content is not None else _read_notebook(Path(source.path))
        tag = source.tag if source.cells == "tagged" else None
        text, shipped_language = notebook_code(notebook, tag)
        if not text.strip():
            which = f"cells tagged {tag!r}" if tag else "code cells"
            raise ValueError(f"notebook {str(source.path)!r} has no {which} to run")
        origin = source.origin or f"notebook:{source.path}"
        spans = notebook_spans(notebook, tag, text, str(source.path))
        files = {cell_sources.SOURCES_FILE: cell_sources.source_map({"main.py": spans})} if spans else {}
        return LoadedCode(text, "main.py", language or shipped_language, origin, files)
    raise TypeError(f"not a code source: {type(source).__name__}")


def notebook_cells(notebook: dict[str, Any], tag: str | None) -> list[str]:
    """Sources of a notebook's code cells, or only of those carrying `tag`; a `%%px_distributed`
    cell stands for its body (a notebook written around the magics, like quickstart.ipynb,
    ships the code its `%%px_distributed` cells run)."""
    from ..notebook_code import distributed_body

    cells = []
    for _, _, text in _code_cells(notebook, tag):
        body = distributed_body(text)
        cells.append(text if body is None else body)
    return cells


def _code_cells(notebook: dict[str, Any], tag: str | None) -> Iterator[tuple[int, dict[str, Any], str]]:
    """(position, cell, source text) of each code cell a submission takes: all, or those tagged."""
    for position, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        if tag is not None and tag not in (cell.get("metadata", {}).get("tags") or []):
            continue
        source = cell.get("source", "")
        yield position, cell, "".join(source) if isinstance(source, list) else str(source)


def notebook_code(notebook: dict[str, Any], tag: str | None) -> tuple[str, str]:
    """(code, language) a notebook ships: its code cells joined as `--notebook` joins them
    (`%%px_distributed` cells as their bodies), other px magic cells and lines dropped, IPython
    syntax rewritten."""
    from ..notebook_code import notebook_source, transform

    code = notebook_source(notebook_cells(notebook, tag), "")
    if not code.strip():
        return "", "python"
    shipped = transform(code)
    return shipped.source, shipped.language


def notebook_spans(notebook: dict[str, Any], tag: str | None, shipped: str, name: str) -> list[dict[str, Any]]:
    """Where each line of a notebook's shipped code (`notebook_code`) came from: one span per
    cell (its id, execution count and position), or none where IPython's rewriting changed the
    number of lines (a cell magic becomes one call), so nothing points at a wrong line."""
    from ..notebook_code import distributed_body_at, source_spans

    picked = []
    for position, cell, text in _code_cells(notebook, tag):
        body = distributed_body_at(text)
        place = {"cell_id": cell.get("id"), "execution_count": cell.get("execution_count"), "cell_index": position}
        picked.append((body[0] if body else text, body[1] if body else 0, {**place, "notebook": name}))
    return source_spans(picked, None, shipped)


def _read_notebook(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise FileNotFoundError(f"notebook {str(path)!r} does not exist")
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"notebook {str(path)!r} is not a notebook (.ipynb JSON): {error}") from None
    if not isinstance(notebook, dict):
        raise ValueError(f"notebook {str(path)!r} is not a notebook (.ipynb JSON)")
    return notebook


def read_script(path: Path) -> tuple[str, str, str]:
    """(source text, entrypoint file name, where it came from) of a script on disk.

    A script is decoded as Python itself would (PEP 263: a `# -*- coding: latin-1 -*-` line, a
    UTF-8 byte order mark, else UTF-8), and stored as UTF-8; so its coding line, if any, is
    rewritten to say utf-8 (same line, same line numbers), or Python would decode the stored
    bytes as the old encoding. A script that does not decode is refused, naming the file.
    """
    if not path.is_file():
        raise FileNotFoundError(f"script {str(path)!r} does not exist")
    data = path.read_bytes()
    hint = "save it as UTF-8 or declare its encoding on its first line (# -*- coding: latin-1 -*-)"
    try:
        encoding, first_lines = tokenize.detect_encoding(io.BytesIO(data).readline)
        declared = None
    except SyntaxError as error:  # an unknown encoding, or bytes in the first lines that are not UTF-8
        encoding, first_lines, declared = "utf-8", [], error.msg
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        raise ValueError(
            f"script {str(path)!r} is not {error.encoding} text "
            f"(byte {data[error.start]:#04x} at offset {error.start}); {hint}"
        ) from None
    if declared is not None:
        raise ValueError(f"script {str(path)!r}: {declared}; {hint}")
    if encoding.lower() not in ("utf-8", "utf-8-sig"):
        lines = text.splitlines(keepends=True)
        cookie = re.compile(r"^([ \t\f]*#.*?coding[:=][ \t]*)([-\w.]+)")
        for number in range(min(len(first_lines), len(lines))):
            if cookie.match(lines[number]):
                lines[number] = cookie.sub(r"\g<1>utf-8", lines[number], count=1)
                break
        text = "".join(lines)
    return text, path.name, str(path.resolve())
