"""A code source made the files a run ships: `load_code`, the one step between what a surface was
given (`sources`) and what the run store keeps in the run's `code/` directory.

Each kind of source is read here and nowhere else: a script decoded as Python would (PEP 263), a
notebook's cells joined and rewritten (`notebook`), a function pickled with what it uses
(`function_calls`). Code that came from a notebook goes with its source map
(`code/sources.json`, `source_map`), so a replica's traceback names the cell.
"""

from __future__ import annotations

import io
import json
import re
import tokenize
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..runstore import CodeSpec
from . import function_calls, notebook, source_map
from .sources import CodeSource, FunctionCall, NotebookCells, ScriptFile, SourceText


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
    #: A script's own file: a polyaxonfile's `run.cmd` may name it (`topology.values.declared_run`).
    from_script: bool = False

    @classmethod
    def kept(cls, spec: CodeSpec, text: str) -> LoadedCode:
        """The code a sweep recorded (`spec` and its entrypoint's `text`), loaded already: each
        trial submits it as it is."""
        if spec.entrypoint == "main.py":
            return cls(text, "main.py", spec.language, spec.source or "sweep")
        text = text if text.endswith("\n") else text + "\n"
        return cls(text, spec.entrypoint, spec.language, spec.source or f"script:{spec.entrypoint}", from_script=True)

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


def load_code(source: CodeSource | LoadedCode, language: str | None = None) -> LoadedCode:
    """The text a source ships; `language` ("python" / "ipython") overrides the source's. Code
    loaded already (where a surface needed it first: the server, to refuse a notebook without
    code; a sweep's trials) is not loaded again."""
    if isinstance(source, LoadedCode):
        if language is None or language == source.language:
            return source
        return replace(source, language=language, returns=source.returns and language == "python")
    if isinstance(source, ScriptFile):
        if source.text is not None:
            text, name = source.text, Path(source.path).name
            origin = source.origin or f"script:{source.path}"
            text = text if text.endswith("\n") else text + "\n"
        else:
            text, name, origin = read_script(Path(source.path))
            origin = source.origin or origin
        return LoadedCode(text, name, language or "python", origin, from_script=True)
    if isinstance(source, SourceText):
        if not isinstance(source.text, str):
            raise TypeError(f"code text must be a str, got {type(source.text).__name__}")
        files = {source_map.SOURCES_FILE: source_map.source_map({"main.py": list(source.cells)})}
        returns = source.returns and (language or source.language) == "python"
        return LoadedCode(
            source.text, "main.py", language or source.language, source.origin, files if source.cells else {}, returns
        )
    if isinstance(source, FunctionCall):
        name = function_calls.describe(source.fn)
        stub = f"# jupyter_px.submit({name}): every replica calls it; the call is {function_calls.FUNCTION_FILE}\n"
        shipped: dict[str, bytes | str] = {**function_calls.pack(source.fn, source.args, source.kwargs)}
        if source.sources:
            shipped[source_map.SOURCES_FILE] = source_map.source_map(code=source.sources)
        return LoadedCode(stub, "main.py", "function", source.origin or f"function:{name}", shipped, returns=True)
    if isinstance(source, NotebookCells):
        document = source.content if source.content is not None else _read_notebook(Path(source.path))
        tag = source.tag if source.cells == "tagged" else None
        text, shipped_language = notebook.document_code(document, tag)
        if not text.strip():
            which = f"cells tagged {tag!r}" if tag else "code cells"
            raise ValueError(f"notebook {str(source.path)!r} has no {which} to run")
        origin = source.origin or f"notebook:{source.path}"
        spans = notebook.document_spans(document, tag, text, str(source.path))
        files = {source_map.SOURCES_FILE: source_map.source_map({"main.py": spans})} if spans else {}
        return LoadedCode(text, "main.py", language or shipped_language, origin, files)
    raise TypeError(f"not a code source: {type(source).__name__}")


def _read_notebook(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise FileNotFoundError(f"notebook {str(path)!r} does not exist")
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"notebook {str(path)!r} is not a notebook (.ipynb JSON): {error}") from None
    if not isinstance(document, dict):
        raise ValueError(f"notebook {str(path)!r} is not a notebook (.ipynb JSON)")
    return document


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
