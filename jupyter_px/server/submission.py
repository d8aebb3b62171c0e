"""What the sidebar submits: code read server-side from a notebook or a script in the server's root.

The browser sends a path, never code or a filesystem path of its own choosing: the file is read
through the server's contents manager, which resolves API paths inside the root directory and
refuses `../` tricks, hidden files and anything outside the root (404), exactly as it does for
the file browser. A notebook's code is the same as `%%px_distributed --notebook` ships: code
cells (all of them, or those tagged `px`), px magic cells and lines dropped, IPython syntax
rewritten (`notebook_code`).
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from typing import Any

from jupyter_server.utils import ensure_async
from tornado import web

from ..notebook_code import notebook_source, transform

DEFAULT_TAG = "px"


@dataclass(frozen=True)
class SubmittedCode:
    """Code to submit and where it came from (recorded in the run as `source`)."""

    source: str
    language: str
    origin: str  # "notebook:<api path>" or "script:<api path>"
    workdir: str | None  # the file's directory on disk, when the contents manager is file-based


def _clean_path(path: Any, field: str) -> str:
    if not isinstance(path, str) or not path.strip():
        raise web.HTTPError(400, f"{field}: {path!r} is not a path (give the file's path in the file browser)")
    if "\x00" in path:
        raise web.HTTPError(400, f"{field}: {path!r} contains a NUL byte")
    return path.strip().lstrip("/")


def notebook_cells(notebook: dict[str, Any], tag: str | None) -> list[str]:
    """Sources of the code cells, or only of those carrying `tag`."""
    cells = []
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        if tag is not None and tag not in (cell.get("metadata", {}).get("tags") or []):
            continue
        source = cell.get("source", "")
        cells.append("".join(source) if isinstance(source, list) else str(source))
    return cells


def _workdir(contents_manager: Any, path: str) -> str | None:
    root = getattr(contents_manager, "root_dir", None)
    if not root:
        return None
    directory = os.path.realpath(os.path.join(root, posixpath.dirname(path)))
    root_real = os.path.realpath(root)
    if directory != root_real and not directory.startswith(root_real + os.sep):
        return None  # a symlink out of the root: run in the root instead
    return directory


async def code_from_notebook(contents_manager: Any, path: Any, tag: str | None) -> SubmittedCode:
    path = _clean_path(path, "notebook")
    if not path.endswith(".ipynb"):
        raise web.HTTPError(400, f"notebook: {path!r} is not a notebook (.ipynb)")
    model = await ensure_async(contents_manager.get(path, content=True, type="notebook"))
    cells = notebook_cells(model["content"], tag)
    code = notebook_source(cells, "")
    if not code.strip():
        which = f"cells tagged {tag!r}" if tag else "code cells"
        raise web.HTTPError(400, f"notebook: {path!r} has no {which} to run")
    shipped = transform(code)
    return SubmittedCode(shipped.source, shipped.language, f"notebook:{path}", _workdir(contents_manager, path))


async def code_from_script(contents_manager: Any, path: Any) -> SubmittedCode:
    path = _clean_path(path, "script")
    if not path.endswith(".py"):
        raise web.HTTPError(400, f"script: {path!r} is not a Python script (.py)")
    model = await ensure_async(contents_manager.get(path, content=True, type="file", format="text"))
    text = model["content"]
    if not text.endswith("\n"):
        text += "\n"  # api.submit takes a one-line text ending in .py for a path
    return SubmittedCode(text, "python", f"script:{path}", _workdir(contents_manager, path))
