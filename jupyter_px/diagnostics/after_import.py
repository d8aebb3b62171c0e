"""Run something on a module once it is imported: at once where it already is (a replica forked
from a warm template, which preloaded it), else right after the import executes it (a meta path
finder that wraps the module's loader, then steps aside), so that a replica that never imports the
module pays nothing. What the runner sets in torch.distributed before the user's code uses it
(`collective_timeout.py`, `group_teardown.py`).

Standard library only: the runner imports it in every replica.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any


class _AfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Calls each of `then` on the module named `name` once it has been executed, then steps
    aside (one finder per module: a second would never see the import the first one handles)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.then: list[Callable[[ModuleType], None]] = []
        self._loader: Any = None

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)  # the finders after this one find the real module
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        self._loader, spec.loader = spec.loader, self
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__.loader = module.__loader__ = self._loader  # type: ignore[union-attr]
        self._loader.exec_module(module)
        for then in self.then:
            then(module)


def on_import(name: str, then: Callable[[ModuleType], None]) -> None:
    """`then(module)` now if `name` is imported, else once it is (once per `then`)."""
    module = sys.modules.get(name)
    if module is not None:
        then(module)
        return
    finder = next((f for f in sys.meta_path if isinstance(f, _AfterImport) and f.name == name), None)
    if finder is None:
        finder = _AfterImport(name)
        sys.meta_path.insert(0, finder)
    if then not in finder.then:
        finder.then.append(then)
