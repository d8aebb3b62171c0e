"""The local backend's side of spawn-ahead pools (`jupyter_px.forkserver.pool`): what a replica
needs of a pool's interpreter, and what the next pool is made of.

**What a replica needs.** A member imported the framework ahead of need, so it must have had,
then, the values of the variables read at import (`pool.READ_AT_IMPORT`) that this replica's
process would have had: its environment's (the run's thread counts, the topology's `env`), with
what its script sets itself before it imports the framework applied over them
(`os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")` or `os.environ[...] = "..."` at the top of
the entry point, a common TensorFlow idiom: found by reading the script, never by running it).
A replica whose values differ from every member's starts cold, and its status says which.

**The next pool.** Each run of a pool framework leaves a hint beside its template's state:
one entry per replica it started (what each imported with), and the optional modules its script
imports (`tf_keras`). The template's next standby spawns that many members, each with one
entry's values (the run before sized it); a template whose standby was made for another hint
replaces it at once (`forkserver.template`, op `hint`).
"""

from __future__ import annotations

import ast
import contextlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...forkserver.client import TemplateUnavailable, ask
from ...forkserver.pool import MEMBER_MODULE, import_env
from ...forkserver.pool_member import READY_NAME
from ..preload import POOL_OPTIONAL, POOL_PRELOAD
from . import warm

log = logging.getLogger(__name__)

#: What a script sets before its framework's import: (how, name, value), how being
#: "setdefault" or "set".
Preset = tuple[str, str, str]


def script_facts(entrypoint: Path, framework: str | None) -> tuple[list[str], list[Preset]]:
    """The optional pool modules `entrypoint` imports (`POOL_OPTIONAL`), and the variables it sets
    with literal values at its top level before it first imports the framework. Nothing when it
    does not read as Python (IPython code)."""
    try:
        tree = ast.parse(entrypoint.read_text())
    except (OSError, SyntaxError, ValueError):
        return [], []
    framework_modules = POOL_PRELOAD.get(framework, ())
    optional = POOL_OPTIONAL.get(framework, ())
    imported = {name.split(".")[0] for node in ast.walk(tree) for name in _imported(node)}
    presets: list[Preset] = []
    for node in tree.body:
        if any(name.split(".")[0] in framework_modules for name in _imported(node)):
            break
        preset = _preset(node)
        if preset is not None:
            presets.append(preset)
    return [name for name in optional if name in imported], presets


def _imported(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and not node.level:
        return [node.module]
    return []


def _is_environ(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ" and ast.unparse(node.value) == "os"


def _preset(node: ast.stmt) -> Preset | None:
    """`os.environ.setdefault("X", "v")` or `os.environ["X"] = "v"`, with literal strings."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        call = node.value
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "setdefault" and _is_environ(func.value):
            values = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if len(values) == 2 == len(call.args):
                return ("setdefault", values[0], values[1])
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript):
        target = node.targets[0]
        key, value = target.slice, node.value
        if (
            _is_environ(target.value)
            and isinstance(key, ast.Constant)
            and isinstance(key.value, str)
            and isinstance(value, ast.Constant)
            and isinstance(value.value, str)
        ):
            return ("set", key.value, value.value)
    return None


def wanted_env(env: Mapping[str, str], presets: Sequence[Preset]) -> dict[str, str]:
    """What a replica started with `env`, running a script that sets `presets` first, has of the
    variables read at import when its framework is imported."""
    effective = dict(env)
    for how, name, value in presets:
        if how == "set" or name not in effective:
            effective[name] = value
    return import_env(effective)


def report(framework: str | None, members: Sequence[Mapping[str, str]], imports: Sequence[str]) -> None:
    """Leave the hint for the next pool of `framework`'s template (if one runs): `members`, each
    replica's environment at import, in start order; `imports`, the optional modules the script
    imports. The template is told, so that a standby made for another hint is replaced now."""
    if framework not in POOL_PRELOAD or not members:
        return
    key = warm.template_key(framework)
    state = warm.read_state(key)
    if not warm.alive(state) or state is None:
        return
    hint = {"members": [dict(m) for m in members], "imports": list(imports)}
    path = warm.pool_hint_path(key)
    try:
        if path.exists() and json.loads(path.read_text()) == hint:
            return
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(hint, indent=1))
        os.replace(tmp, path)
    except (OSError, ValueError) as error:
        log.warning("cannot leave the spawn-ahead pool's hint in %s: %s", path, error)
        return
    with contextlib.suppress(TemplateUnavailable):  # starting: its first standby reads the file
        ask(state["socket"], "hint", timeout=2.0)


def members(standby_pid: int | None) -> list[dict[str, Any]]:
    """The interpreters of the pool a standby holds, each with its memory (`jupyter px warm`)."""
    if not standby_pid:
        return []
    import psutil

    found = []
    try:
        children = psutil.Process(standby_pid).children()
    except psutil.Error:
        return []
    for child in children:
        try:
            if MEMBER_MODULE not in child.cmdline():
                continue
            info = child.memory_full_info()
        except (psutil.Error, OSError):
            continue
        found.append(
            {
                "pid": child.pid,
                "state": "ready" if child.name() == READY_NAME else "importing",
                "memory": {
                    "rss_mib": round(info.rss / 2**20, 1),
                    "uss_mib": round(info.uss / 2**20, 1),
                    "pss_mib": round(getattr(info, "pss", 0) / 2**20, 1),
                },
            }
        )
    return found


def differs(names: Sequence[str]) -> str:
    shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
    return f"its {shown} at import differ from the pool's"
