"""What the sidebar submits: code read server-side from a notebook or a script in the server's root,
loaded here (once: the run service does not load it again) and handed to the run service.

The browser sends a path, never code or a filesystem path of its own choosing: the file is read
through the server's contents manager, which resolves API paths inside the root directory and
refuses `../` tricks, hidden files and anything outside the root (404), exactly as it does for
the file browser. A notebook's code is the same as `%%px_distributed --notebook` ships: code
cells (all of them, or those tagged `px`), a `%%px_distributed` cell as its body, other px magic
cells and lines dropped, IPython syntax rewritten (`jupyter_px.code.notebook`).
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from typing import Any

from jupyter_server.utils import ensure_async
from tornado import web

from ..service import DEFAULT_TAG, LoadedCode, NotebookCells, ScriptFile, load_code


@dataclass(frozen=True)
class SubmittedCode:
    """Code to submit: loaded from what the contents manager read, and the directory the
    replicas run in."""

    source: LoadedCode
    workdir: str | None  # the file's directory on disk, when the contents manager is file-based


def _clean_path(path: Any, field: str) -> str:
    if not isinstance(path, str) or not path.strip():
        raise web.HTTPError(400, f"{field}: {path!r} is not a path (give the file's path in the file browser)")
    if "\x00" in path:
        raise web.HTTPError(400, f"{field}: {path!r} contains a NUL byte")
    return path.strip().lstrip("/")


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
    """A notebook's code cells (only those tagged `tag`, unless None), checked to hold code."""
    path = _clean_path(path, "notebook")
    if not path.endswith(".ipynb"):
        raise web.HTTPError(400, f"notebook: {path!r} is not a notebook (.ipynb)")
    model = await ensure_async(contents_manager.get(path, content=True, type="notebook"))
    source = NotebookCells(
        path,
        cells="tagged" if tag else "all",
        tag=tag or DEFAULT_TAG,
        content=model["content"],
        origin=f"notebook:{path}",
    )
    try:
        code = load_code(source)  # a notebook without code is a 400 here, not a failed submission
    except ValueError:
        which = f"cells tagged {tag!r}" if tag else "code cells"
        raise web.HTTPError(
            400,
            f"notebook: {path!r} has no {which} to run "
            # no percent signs: the error path doubles them (tornado's log formatting)
            "(the body of a px_distributed cell is shipped; px_topology cells and px line magics are not code)",
        ) from None
    return SubmittedCode(code, _workdir(contents_manager, path))


async def code_from_script(contents_manager: Any, path: Any) -> SubmittedCode:
    path = _clean_path(path, "script")
    if not path.endswith(".py"):
        raise web.HTTPError(400, f"script: {path!r} is not a Python script (.py)")
    model = await ensure_async(contents_manager.get(path, content=True, type="file", format="text"))
    code = load_code(ScriptFile(path, text=model["content"], origin=f"script:{path}"))
    return SubmittedCode(code, _workdir(contents_manager, path))
