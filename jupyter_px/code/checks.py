"""Code checked before it leaves the notebook: what every replica would miss.

A cell that reads `lr` defined three cells up works in the notebook and fails with NameError in
every replica. `missing_names` finds such names statically (symtable: every scope's global reads
minus what the shipped code binds), so `%%px_distributed` refuses before submitting and suggests
`--push`. A value pushed with `--push` is pickled, and pickle ships functions and classes defined
in the notebook by name only: `local_references` finds those first. `ends_with_expression` says
whether a cell's last statement is a value (each replica's result).
"""

from __future__ import annotations

import ast
import builtins
import symtable
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


def ends_with_expression(python: str) -> bool:
    """Does the code's last statement compute a value (a notebook cell's result)?"""
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
